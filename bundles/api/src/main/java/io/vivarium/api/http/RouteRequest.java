package io.vivarium.api.http;

import java.util.Optional;

import io.vivarium.api.Caller;

import org.osgi.annotation.versioning.ProviderType;

/** A request as a route handler sees it: authenticated, size-limited, with its path parameters. */
@ProviderType
public interface RouteRequest {

    Caller caller();

    /** A path parameter bound by the route template. */
    String pathParam(String name);

    /** A query parameter, if present. */
    Optional<String> queryParam(String name);

    /** A request header, if present (its first value). Since 1.4. */
    Optional<String> header(String name);

    /**
     * The JSON body bound to {@code type} (snake_case field names; unknown fields, wrong types and
     * malformed JSON are a 400 that names the problem). A missing body is a 400.
     */
    <T> T body(Class<T> type);

    /** The body as sent (for uploads such as bundle jars), at most the route's body limit. */
    byte[] rawBody();

    /** Like {@link #body(Class)}, but an empty body is allowed and yields empty. */
    <T> Optional<T> optionalBody(Class<T> type);
}
