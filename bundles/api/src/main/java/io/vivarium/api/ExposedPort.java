package io.vivarium.api;

import java.time.Instant;
import java.util.Objects;

/**
 * A port of a sandbox that the daemon passes requests on to ({@link PortService}). Since 2.6.
 *
 * @param port the TCP port inside the sandbox
 * @param token a signed token that lets a request without a bearer token reach this port, and
 *        nothing else, until {@code expiresAt} or until the port is closed
 * @param expiresAt when {@code token} stops working
 */
public record ExposedPort(int port, String token, Instant expiresAt) {
    public ExposedPort {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(expiresAt, "expiresAt");
    }
}
