package io.vivarium.api.http;

import java.util.Objects;

import io.vivarium.api.Role;

/**
 * One operation of a surface.
 *
 * @param method HTTP method, or {@link #ANY_METHOD} (since 1.6): then the edge reads no body and the
 *        handler answers with an {@link Upstream}, which gets the body as it streams in
 * @param template path under the surface prefix; {@code {name}} segments bind path parameters,
 *        e.g. {@code /sandboxes/{id}/exec}; a last segment {@code {name*}} (since 1.6) binds the rest
 *        of the path as sent (still percent-encoded, a trailing {@code /} kept; empty when there is
 *        none)
 * @param role the least role a caller needs; weaker callers get 403
 * @param status the status of a successful answer (200, 201, 204)
 * @param handler what to do; its return value is written as JSON (nothing for 204), or an
 *        {@link Upstream} the request is passed on to with the body read (since 1.10)
 * @param maxBodyBytes the largest body accepted (413 beyond it)
 */
public record Route(String method, String template, Role role, int status, RouteHandler handler, long maxBodyBytes) {
    /** The method of a route that matches every method and passes the request on (an {@link Upstream}). Since 1.6. */
    public static final String ANY_METHOD = "*";
    /** The body limit of JSON routes. */
    public static final long DEFAULT_MAX_BODY_BYTES = 1 << 20;

    public Route {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(template, "template");
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(handler, "handler");
        if (maxBodyBytes < 0) {
            throw new IllegalArgumentException("maxBodyBytes must not be negative");
        }
    }

    /** A route with the default body limit of {@value #DEFAULT_MAX_BODY_BYTES} bytes. */
    public Route(String method, String template, Role role, int status, RouteHandler handler) {
        this(method, template, role, status, handler, DEFAULT_MAX_BODY_BYTES);
    }
}
