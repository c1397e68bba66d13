package io.vivarium.api.http;

import java.net.URI;
import java.util.Objects;

/**
 * What the handler of a route of method {@link Route#ANY_METHOD} returns to pass the request on to
 * another HTTP server: the http bundle forwards it to {@code target} (the request's query string
 * appended as it came, less the edge's own {@code vivarium_token}), streaming its body and the
 * answer, and passes a WebSocket upgrade through. It never forwards the caller's credentials (the
 * {@code Authorization} header, {@code vivarium_*} cookies) and adds {@code X-Forwarded-For},
 * {@code X-Forwarded-Proto}, {@code X-Forwarded-Host} and {@code X-Forwarded-Prefix} (the path the
 * route's tail hangs off). An upstream that cannot be reached is a 502 with {@code unreachable} in
 * its message. Since 1.6.
 *
 * @param target an {@code http} URI: scheme, address, port and path (no query)
 * @param unreachable what the 502 says when nothing answers at the target
 * @param done what the http bundle runs once the exchange has ended (the answer passed on or failed,
 *        the WebSocket closed on either side, or an upgrade refused); since 1.7
 */
public record Upstream(URI target, String unreachable, Runnable done) {
    public Upstream {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(unreachable, "unreachable");
        if (!"http".equals(target.getScheme()) || target.getRawQuery() != null) {
            throw new IllegalArgumentException("an upstream is an http URI without a query: " + target);
        }
        done = done == null ? () -> { } : done;
    }

    /** An upstream with nothing to run when its exchange ends (1.6). */
    public Upstream(URI target, String unreachable) {
        this(target, unreachable, null);
    }
}
