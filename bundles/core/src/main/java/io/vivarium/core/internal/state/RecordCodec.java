package io.vivarium.core.internal.state;

import java.io.IOException;

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
final class RecordCodec {
    private final ObjectMapper json = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT);

    ObjectMapper json() {
        return json;
    }

    ObjectNode envelope(RecordCollection<?> c, Object body, long revision, String node) {
        ObjectNode e = json.createObjectNode();
        e.put("schema", c.schema());
        e.put("revision", revision);
        e.put("node", node);
        e.set("body", json.valueToTree(body));
        return e;
    }

    byte[] bytes(JsonNode tree) throws IOException {
        return json.writeValueAsBytes(tree);
    }

    /** Reads a stored record; one without an envelope is taken as revision 1 of {@code node}. */
    <T> Stored<T> decode(RecordCollection<T> c, String key, byte[] bytes, String node) throws IOException {
        JsonNode tree = json.readTree(bytes);
        if (tree == null || !tree.isObject()) {
            throw new IOException("not a JSON object");
        }
        boolean enveloped = tree.has("schema") && tree.has("body");
        int schema = enveloped ? tree.get("schema").asInt() : 0;
        if (schema > c.schema()) {
            throw new IOException("written with schema " + schema + " by a newer version; this one reads up to " + c.schema());
        }
        JsonNode body = enveloped ? tree.get("body") : tree;
        for (int s = schema; s < c.schema(); s++) {
            body = c.upgrade().apply(s, body);
        }
        return new Stored<>(key, json.treeToValue(body, c.type()), enveloped ? tree.get("revision").asLong() : 1,
                enveloped ? tree.get("node").asText() : node);
    }
}
