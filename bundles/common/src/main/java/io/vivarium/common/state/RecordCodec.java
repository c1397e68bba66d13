package io.vivarium.common.state;

import java.io.IOException;

import java.util.Map;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.Stored;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Records as JSON envelopes, {@code {"schema", "revision", "node", "body"}}, and the reading of
 * records written before the envelope existed (schema 0: the body alone), upgraded to the
 * collection's current schema.
 */
public final class RecordCodec {
    private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {
    };
    private final ObjectMapper json = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT);

    public ObjectMapper json() {
        return json;
    }

    public ObjectNode envelope(RecordCollection<?> c, Object body, long revision, String node) {
        ObjectNode e = json.createObjectNode();
        e.put("schema", c.schema());
        e.put("revision", revision);
        e.put("node", node);
        e.set("body", json.valueToTree(body));
        return e;
    }

    public byte[] bytes(JsonNode tree) throws IOException {
        return json.writeValueAsBytes(tree);
    }

    /** Reads a stored record; one without an envelope is taken as revision 1 of {@code node}. */
    public <T> Stored<T> decode(RecordCollection<T> c, String key, byte[] bytes, String node) throws IOException {
        return decode(c, key, json.readTree(bytes), node);
    }

    /** As {@link #decode(RecordCollection, String, byte[], String)}, from a parsed envelope. */
    public <T> Stored<T> decode(RecordCollection<T> c, String key, JsonNode tree, String node) throws IOException {
        if (tree == null || !tree.isObject()) {
            throw new IOException("not a JSON object");
        }
        boolean enveloped = tree.has("schema") && tree.has("body");
        int schema = enveloped ? tree.get("schema").asInt() : 0;
        if (schema > c.schema()) {
            throw new IOException("written with schema " + schema + " by a newer version; this one reads up to " + c.schema());
        }
        JsonNode body = enveloped ? tree.get("body") : tree;
        if (schema < c.schema()) {
            Map<String, Object> upgraded = json.convertValue(body, MAP);
            for (int s = schema; s < c.schema(); s++) {
                upgraded = c.upgrade().apply(s, upgraded);
            }
            body = json.valueToTree(upgraded);
        }
        return new Stored<>(key, json.treeToValue(body, c.type()), enveloped ? tree.get("revision").asLong() : 1,
                enveloped ? tree.get("node").asText() : node);
    }
}
