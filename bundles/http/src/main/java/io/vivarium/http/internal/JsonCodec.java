package io.vivarium.http.internal;

import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.vivarium.api.ApiException;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.EvalResult;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * JSON on the wire: snake_case names, strict binding (unknown fields, wrong types, trailing data
 * and malformed JSON are rejected), and messages that tell the caller which field is wrong.
 */
final class JsonCodec {
    private final ObjectMapper mapper = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            // an eval's answer names every field, null or not, as the reference API's does
            .withConfigOverride(EvalResult.class,
                    o -> o.setInclude(JsonInclude.Value.construct(JsonInclude.Include.ALWAYS, null)))
            // a command names its exit code and error while it has none, so that a client sees the field
            .withConfigOverride(CommandInfo.class,
                    o -> o.setInclude(JsonInclude.Value.construct(JsonInclude.Include.ALWAYS, null)))
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    byte[] write(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getName(), e);
        }
    }

    byte[] error(String message) {
        return write(Map.of("error", message));
    }

    <T> T read(byte[] body, Class<T> type) {
        try {
            T value = mapper.readValue(body, type);
            if (value == null) {
                throw ApiException.badRequest("request body must be a JSON object, got null");
            }
            return value;
        } catch (JacksonException e) {
            throw ApiException.badRequest(describe(e));
        } catch (IOException e) {
            throw ApiException.badRequest("cannot read request body: " + e.getMessage());
        }
    }

    static String describe(JacksonException e) {
        if (e instanceof JsonMappingException && e.getCause() instanceof JsonParseException p) {
            return describe(p);
        }
        if (e instanceof UnrecognizedPropertyException u) {
            return "unknown field \"" + u.getPropertyName() + "\"" + known(u.getKnownPropertyIds());
        }
        if (e instanceof InputCoercionException c) {
            return "number out of range" + (c.getTargetType() == null ? "" : " for " + typeName(c.getTargetType()))
                    + " at line " + c.getLocation().getLineNr() + " column " + c.getLocation().getColumnNr();
        }
        if (e instanceof MismatchedInputException m) {
            String path = path(m.getPath());
            String expected = m.getTargetType() == null ? "another type" : typeName(m.getTargetType());
            if (path.isEmpty()) {
                return m.getMessage().startsWith("No content") ? "request body is empty: send a JSON object"
                        : "request body must be a JSON object, not " + firstLine(m.getOriginalMessage());
            }
            return "field \"" + path + "\" has the wrong type: expected " + expected;
        }
        if (e instanceof JsonParseException p) {
            return "malformed JSON at line " + p.getLocation().getLineNr() + " column " + p.getLocation().getColumnNr()
                    + ": " + firstLine(p.getOriginalMessage());
        }
        if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
            return "field \"" + path(m.getPath()) + "\" is invalid: " + firstLine(m.getOriginalMessage());
        }
        return "invalid JSON body: " + firstLine(e.getOriginalMessage());
    }

    private static String known(Collection<Object> ids) {
        if (ids == null || ids.isEmpty()) {
            return "";
        }
        return " (known fields: " + ids.stream().map(String::valueOf).sorted().collect(Collectors.joining(", ")) + ")";
    }

    private static String path(List<JsonMappingException.Reference> refs) {
        StringBuilder sb = new StringBuilder();
        for (JsonMappingException.Reference r : refs) {
            if (r.getFieldName() != null) {
                sb.append(sb.isEmpty() ? "" : ".").append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                sb.append('[').append(r.getIndex()).append(']');
            }
        }
        return sb.toString();
    }

    private static String typeName(Class<?> type) {
        if (type == Integer.class || type == int.class || type == Long.class || type == long.class) {
            return "an integer";
        }
        if (type == Boolean.class || type == boolean.class) {
            return "true or false";
        }
        if (type == String.class) {
            return "a string";
        }
        if (Collection.class.isAssignableFrom(type) || type.isArray()) {
            return "an array";
        }
        return "an object";
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
