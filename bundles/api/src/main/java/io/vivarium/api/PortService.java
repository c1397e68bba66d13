package io.vivarium.api;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.net.ssl.SSLContext;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Ports of sandboxes exposed through the daemon, provided by core for
 * {@code /v1/sandboxes/{id}/ports} (docs/network.md): a server a sandbox runs on an exposed port is
 * reached through the daemon, with the caller's bearer token or with a signed token that is good for
 * that port alone and expires. The daemon reaches the port at the sandbox's network address, so a
 * sandbox needs a network ({@code egress} mode; an empty allow list gives it an address and no way
 * out). Exposed ports are kept in the sandbox's record: a daemon restart keeps them and the signed
 * tokens. Every method is scoped to the caller's tenant (404 for another's sandbox) and throws
 * {@link ApiException} for what the caller can fix. Since 2.6.
 */
@ProviderType
public interface PortService {
    /** The most ports one sandbox exposes at once. */
    int MAX_PORTS = 16;
    /** How long a signed token lasts unless the caller asks for less or more. */
    Duration DEFAULT_TOKEN_LIFETIME = Duration.ofHours(1);
    /** The longest a caller may ask a signed token to last. */
    Duration MAX_TOKEN_LIFETIME = Duration.ofDays(7);

    /**
     * Exposes {@code port} (1 to 65535) of a running sandbox, or answers again for one already
     * exposed, with a new token of {@code tokenLifetime} (1 s to {@link #MAX_TOKEN_LIFETIME}); 409
     * for a sandbox without a network address or not running, 409 past {@link #MAX_PORTS}.
     */
    ExposedPort expose(Caller caller, String sandboxId, int port, Duration tokenLifetime);

    /** The sandbox's exposed ports, lowest first, each with a new token of {@link #DEFAULT_TOKEN_LIFETIME}. */
    List<ExposedPort> list(Caller caller, String sandboxId);

    /** One exposed port with a new token of {@link #DEFAULT_TOKEN_LIFETIME}; 404 for a port that is not exposed. Since 2.7. */
    ExposedPort get(Caller caller, String sandboxId, int port);

    /** Closes an exposed port: its tokens stop working; 404 for a port that is not exposed. */
    void close(Caller caller, String sandboxId, int port);

    /**
     * Where the daemon reaches an exposed port: {@code http://<address>:<port>}; 404 when not exposed, 409 when not running.
     *
     * @deprecated since 2.8: a request forwarded with this address is not activity while it lasts; use {@link #forward}
     */
    @Deprecated(since = "2.8")
    URI upstream(Caller caller, String sandboxId, int port);

    /**
     * {@link #upstream}, for a request forwarded there now: the sandbox is activity, never demoted
     * while idle, until {@link Forwarding#done()} runs (once, when the request's answer or its
     * WebSocket has ended), so that a long download or an open WebSocket counts all along, not
     * only as it starts. Since 2.8.
     */
    Forwarding forward(Caller caller, String sandboxId, int port);

    /**
     * A request being forwarded to an exposed port ({@link #forward}).
     *
     * @param upstream where the port is reached: {@code http://<address>:<port>/}, or the {@code https}
     *        route of the port on the daemon that runs the sandbox (a fleet's master forwarding to its node)
     * @param done to run once when the forwarded exchange has ended; running it again does nothing
     * @param tls for an {@code https} upstream, the context that trusts its certificate; null otherwise (since 2.12)
     * @param headers set on the forwarded request in place of the caller's of those names: how the
     *        upstream knows the daemon (since 2.12)
     * @param unreachable what the 502 says when the upstream cannot be reached, or null for "nothing
     *        answers on the port" (since 2.12)
     */
    record Forwarding(URI upstream, Runnable done, SSLContext tls, Map<String, String> headers, String unreachable) {
        public Forwarding {
            headers = headers == null ? Map.of() : Map.copyOf(headers);
        }

        /** A port reached at the sandbox's own address (2.8). */
        public Forwarding(URI upstream, Runnable done) {
            this(upstream, done, null, null, null);
        }
    }

    /** The caller a signed token stands for, if it was signed for this sandbox's exposed port and has not expired. */
    Optional<Caller> signedCaller(String token, String sandboxId, int port);
}
