package io.vivarium.kit.guest;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Base64;

/**
 * The protocol's JSON: requests out, responses in. Everything read is untrusted: a response is one
 * object with exactly one of {@code return} or {@code error} (plus an optional {@code id}; other
 * top-level members are ignored, as QMP allows growth there), no duplicate keys, no trailing data,
 * bounded nesting; values are checked field by field by the callers through the helpers below.
 */
final class Wire {
    static final ObjectMapper MAPPER;

    static {
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(32).build())
                .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
        MAPPER = new ObjectMapper(factory);
    }

    private Wire() {
    }

    /** Reads the value of {@code return}; the parser stands on its first token. */
    @FunctionalInterface
    interface ReturnReader<T> {
        T read(JsonParser parser) throws IOException;
    }

    static final ReturnReader<JsonNode> TREE = parser -> MAPPER.readTree(parser);

    /** A parsed response: either a value or the agent's error. */
    record Answer<T>(T value, String errorClass, String errorDesc) {
        boolean isError() {
            return errorClass != null;
        }

        T valueOrThrow(String command) {
            if (isError()) {
                throw GuestAgentException.agentError(command, errorClass, errorDesc);
            }
            return value;
        }
    }

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    /** One request line, newline included. */
    static byte[] request(String command, ObjectNode arguments, Long id) {
        ObjectNode request = MAPPER.createObjectNode().put("execute", command);
        if (arguments != null && !arguments.isEmpty()) {
            request.set("arguments", arguments);
        }
        if (id != null) {
            request.put("id", id);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try {
            MAPPER.writeValue(out, request);
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode a request", e);
        }
        out.write('\n');
        return out.toByteArray();
    }

    static <T> Answer<T> parse(byte[] line, String command, ReturnReader<T> reader) {
        try (JsonParser parser = MAPPER.createParser(line)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw malformed(command, "not a JSON object", null);
            }
            T value = null;
            boolean hasReturn = false;
            JsonNode error = null;
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                switch (field) {
                    case "return" -> {
                        value = reader.read(parser);
                        hasReturn = true;
                    }
                    case "error" -> error = MAPPER.readTree(parser);
                    default -> parser.skipChildren();
                }
            }
            if (parser.nextToken() != null) {
                throw malformed(command, "trailing data after the response object", null);
            }
            if (hasReturn == (error != null)) {
                throw malformed(command, "a response needs exactly one of \"return\" and \"error\"", null);
            }
            if (error != null) {
                if (!error.isObject() || !error.path("class").isTextual()) {
                    throw malformed(command, "\"error\" without a \"class\" string", null);
                }
                JsonNode desc = error.path("desc");
                return new Answer<>(null, error.get("class").asText(), desc.isTextual() ? desc.asText() : "");
            }
            return new Answer<>(value, null, null);
        } catch (IOException e) {
            throw malformed(command, e.getMessage(), e);
        }
    }

    /** The {@code id} member of a response line, or null; used to route multiplexed answers. */
    static Long peekId(byte[] line) {
        try (JsonParser parser = MAPPER.createParser(line)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw malformed("a multiplexed request", "not a JSON object", null);
            }
            Long id = null;
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                JsonToken token = parser.nextToken();
                if (field.equals("id") && token == JsonToken.VALUE_NUMBER_INT
                        && parser.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                    id = parser.getLongValue();
                } else {
                    parser.skipChildren();
                }
            }
            return id;
        } catch (IOException e) {
            throw malformed("a multiplexed request", e.getMessage(), e);
        }
    }

    static GuestAgentException malformed(String command, String what, Throwable cause) {
        return GuestAgentException.peer("malformed answer to " + command + ": " + what, cause);
    }

    // --- field helpers for return values (all throw 502 naming the command and field) ---

    static JsonNode requireObject(JsonNode value, String command) {
        if (value == null || !value.isObject()) {
            throw malformed(command, "the return value is not an object", null);
        }
        return value;
    }

    static long requireLong(JsonNode object, String field, String command) {
        JsonNode node = object.get(field);
        if (node == null || !node.isIntegralNumber() || !node.canConvertToLong()) {
            throw malformed(command, "\"" + field + "\" is missing or not an integer", null);
        }
        return node.longValue();
    }

    static long requireLong(JsonNode object, String field, long min, long max, String command) {
        long value = requireLong(object, field, command);
        if (value < min || value > max) {
            throw malformed(command, "\"" + field + "\" is " + value + ", outside " + min + ".." + max, null);
        }
        return value;
    }

    static Long optionalLong(JsonNode object, String field, String command) {
        return object.has(field) && !object.get(field).isNull() ? requireLong(object, field, command) : null;
    }

    static boolean requireBoolean(JsonNode object, String field, String command) {
        JsonNode node = object.get(field);
        if (node == null || !node.isBoolean()) {
            throw malformed(command, "\"" + field + "\" is missing or not a boolean", null);
        }
        return node.booleanValue();
    }

    static String requireText(JsonNode object, String field, String command) {
        JsonNode node = object.get(field);
        if (node == null || !node.isTextual()) {
            throw malformed(command, "\"" + field + "\" is missing or not a string", null);
        }
        return node.textValue();
    }

    /** Decodes a base64 member, refusing invalid base64 and more than {@code maxBytes} decoded. */
    static byte[] requireBase64(JsonNode object, String field, int maxBytes, String command) {
        String text = requireText(object, field, command);
        if ((long) text.length() * 3 / 4 > maxBytes + 2L) {
            throw malformed(command, "\"" + field + "\" holds more than " + maxBytes + " bytes", null);
        }
        try {
            byte[] bytes = Base64.getDecoder().decode(text);
            if (bytes.length > maxBytes) {
                throw malformed(command, "\"" + field + "\" holds more than " + maxBytes + " bytes", null);
            }
            return bytes;
        } catch (IllegalArgumentException e) {
            throw malformed(command, "\"" + field + "\" is not valid base64", e);
        }
    }
}
