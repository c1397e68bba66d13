package io.vivarium.api.http;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

import javax.net.ssl.SSLContext;

import io.vivarium.api.Relay;

/**
 * What the handler of a route of method {@link Route#ANY_METHOD} returns to pass the request on to
 * another HTTP server, or (since 1.10) the handler of any other route, whose request then goes with
 * the body the edge read: the http bundle forwards it to {@code target} (the request's query string
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
 * @param answerTimeout how long the upstream may take to begin its answer (504 after it); null for the
 *        edge's own bound, 5 minutes; since 1.10
 * @param retryAfterSecs above 0, the upstream is another daemon of this one's, which may be away for
 *        now: when it cannot be reached, fails before its answer begins, or refuses the credentials
 *        of {@code headers} (401), that is a 503 asking the caller to retry after this many seconds,
 *        not a 502 (nor that 401, which is not the caller's); since 1.10
 * @param cuts where the upstream is known to have gone away: the exchange under way with it ends then,
 *        as a 503 saying what the cut said (retry as {@code retryAfterSecs}) if its answer has not
 *        begun, cut short if it has; null for never; since 1.10
 */
public record Upstream(URI target, String unreachable, Runnable done, SSLContext tls, Map<String, String> headers,
        Duration answerTimeout, int retryAfterSecs, Relay.Cuts cuts) {
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
        if (answerTimeout != null && (answerTimeout.isNegative() || answerTimeout.isZero()) || retryAfterSecs < 0) {
            throw new IllegalArgumentException("an answer timeout is positive and a retry not negative: " + answerTimeout
                    + ", " + retryAfterSecs);
        }
    }

    /** An upstream with the edge's answer timeout, a 502 when it cannot be reached (1.9). */
    public Upstream(URI target, String unreachable, Runnable done, SSLContext tls, Map<String, String> headers) {
        this(target, unreachable, done, tls, headers, null, 0, null);
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
