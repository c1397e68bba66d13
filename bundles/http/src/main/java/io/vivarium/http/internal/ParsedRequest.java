package io.vivarium.http.internal;

import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.http.RouteRequest;

/** A request as handed to a route: authenticated caller, bound path parameters, raw body. */
record ParsedRequest(Caller caller, Map<String, String> params, Map<String, String> query,
        UnaryOperator<String> headers, byte[] rawBody, JsonCodec json) implements RouteRequest {

    @Override
    public Optional<String> header(String name) {
        return Optional.ofNullable(headers.apply(name));
    }

    @Override
    public String pathParam(String name) {
        String v = params.get(name);
        if (v == null) {
            throw new IllegalArgumentException("route has no path parameter " + name);
        }
        return v;
    }

    @Override
    public Optional<String> queryParam(String name) {
        return Optional.ofNullable(query.get(name));
    }

    @Override
    public byte[] rawBody() {
        return rawBody.clone();
    }

    @Override
    public <T> T body(Class<T> type) {
        return optionalBody(type).orElseThrow(() -> ApiException.badRequest("request body is empty: send a JSON object"));
    }

    @Override
    public <T> Optional<T> optionalBody(Class<T> type) {
        if (isBlank(rawBody)) {
            return Optional.empty();
        }
        return Optional.of(json.read(rawBody, type));
    }

    private static boolean isBlank(byte[] b) {
        for (byte c : b) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return false;
            }
        }
        return true;
    }
}
