package io.vivarium.api.http;

/** Handles a matched, authenticated and authorised request. */
@FunctionalInterface
public interface RouteHandler {
    /**
     * @return the response body, serialised as JSON with snake_case names, or a {@link BinaryBody}
     *         written as is (ignored for 204), or an {@link Upstream} the request is passed on to
     *         (since 1.10)
     * @throws io.vivarium.api.ApiException for anything the caller can fix
     */
    Object handle(RouteRequest request);
}
