package io.vivarium.fleet.internal;

import java.io.IOException;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The wire form the master and its nodes speak: the API's own JSON (snake_case, nulls left out).
 * Reading is tolerant of fields it does not know, so a node of a newer version still answers.
 */
final class FleetJson {
    static final ObjectMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private FleetJson() {
    }

    static byte[] write(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (IOException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getName(), e);
        }
    }

    static <T> T read(byte[] body, Class<T> type) throws IOException {
        return MAPPER.readValue(body, type);
    }

    /** The message of an {@code {"error": "..."}} body, or the body itself if it is not one. */
    static String error(byte[] body) {
        try {
            var node = MAPPER.readTree(body);
            if (node != null && node.hasNonNull("error")) {
                return node.get("error").asText();
            }
        } catch (IOException e) {
            // not JSON: the text itself says what went wrong
        }
        return new String(body, java.nio.charset.StandardCharsets.UTF_8);
    }
}
