package io.vivarium.api.http;

import java.util.Optional;

import org.osgi.annotation.versioning.ConsumerType;

import io.vivarium.api.Caller;

/**
 * Credentials good for one part of the API only, such as the signed URL of a sandbox's exposed
 * port: a request without an {@code Authorization} header may carry one as the query parameter
 * {@value #PARAMETER} or the cookie of that name. Register one as an OSGi service; the http edge
 * asks each with the request's path. A request that was let in by the query parameter and is
 * answered through an {@link Upstream} gets the cookie, scoped to the path the route's tail hangs
 * off, so the pages it loads next are let in too. Since 1.6.
 */
@ConsumerType
public interface ScopedTokens {
    /** The query parameter and cookie that carry a scoped token. */
    String PARAMETER = "vivarium_token";

    /**
     * The caller {@code token} stands for on {@code path} (decoded, from the first {@code /}, e.g.
     * {@code /v1/sandboxes/sb-1/ports/8000/index.html}), if this service issued it for that path
     * and it is valid now.
     */
    Optional<Caller> caller(String token, String path);
}
