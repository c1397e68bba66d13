package io.vivarium.apiv1.internal;

import io.vivarium.api.ExposedPort;
import io.vivarium.api.http.ScopedTokens;

/**
 * An exposed port as the API shows it (public: the http bundle's Jackson writes it).
 *
 * @param url where it is reached with a bearer token
 * @param signedUrl where it is reached without one, until {@code expiresAt}
 * @param expiresAt ISO 8601, UTC
 */
public record PortBody(int port, String url, String signedUrl, String expiresAt) {
    static PortBody of(String sandboxId, ExposedPort p) {
        String url = "/v1/sandboxes/" + sandboxId + "/ports/" + p.port() + "/";
        return new PortBody(p.port(), url, url + "?" + ScopedTokens.PARAMETER + "=" + p.token(), p.expiresAt().toString());
    }
}
