package io.vivarium.api.http;

import java.net.URI;
import java.util.Map;
import java.util.Objects;

import javax.net.ssl.SSLContext;

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
 * @param target an {@code http} URI, or an {@code https} one with {@code tls}: scheme, address, port
 *        and path (no query)
 * @param unreachable what the 502 says when nothing answers at the target
 * @param done what the http bundle runs once the exchange has ended (the answer passed on or failed,
 *        the WebSocket closed on either side, or an upgrade refused); since 1.7
 * @param tls for an {@code https} target, the context whose trust managers alone decide whether the
 *        upstream's certificate is the one expected (the http bundle checks no host name besides: an
 *        {@link javax.net.ssl.X509ExtendedTrustManager} that pins a certificate is enough); null for
 *        {@code http}; since 1.9
 * @param headers set on the forwarded request and its WebSocket handshake, in place of any the caller
 *        sent under those names (how the upstream knows the daemon: its credentials); since 1.9
 */
public record Upstream(URI target, String unreachable, Runnable done, SSLContext tls, Map<String, String> headers) {
    public Upstream {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(unreachable, "unreachable");
        boolean plain = "http".equals(target.getScheme()) && tls == null;
        boolean secure = "https".equals(target.getScheme()) && tls != null;
        if (!plain && !secure || target.getRawQuery() != null) {
            throw new IllegalArgumentException("an upstream is an http URI, or an https one with its TLS context, without a query: "
                    + target);
        }
        done = done == null ? () -> { } : done;
        headers = headers == null ? Map.of() : Map.copyOf(headers);
    }

    /** An upstream over plain HTTP, nothing added to its requests (1.7). */
    public Upstream(URI target, String unreachable, Runnable done) {
        this(target, unreachable, done, null, null);
    }

    /** An upstream with nothing to run when its exchange ends (1.6). */
    public Upstream(URI target, String unreachable) {
        this(target, unreachable, null);
    }
}
