package io.vivarium.api;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

import javax.net.ssl.SSLContext;

/**
 * The daemon that runs a sandbox, when it is not the one asked (a fleet's master and its node): a
 * request about the sandbox that the API surface passes on there as it came gets that daemon's
 * answer as it gave it ({@link SandboxService#relay}). Since 2.13.
 *
 * @param origin the daemon's {@code https} origin: scheme, address and port, no path
 * @param tls the context whose trust managers alone decide whether its certificate is the one expected
 * @param headers set on every request passed on, in place of the caller's of those names: the
 *        credentials it knows this daemon by, and the caller's tenant and role
 * @param answerTimeout how long it may take to begin an answer (an exec runs for up to an hour)
 * @param unreachable what the 503 says when it cannot be reached
 * @param retryAfterSecs when that 503 asks the caller to try again
 * @param cuts where the daemon is known to have gone away (it stopped answering): a request under way
 *        with it ends then, as a 503 with the same retry if its answer has not begun; null for never
 */
public record Relay(URI origin, SSLContext tls, Map<String, String> headers, Duration answerTimeout, String unreachable,
        int retryAfterSecs, Cuts cuts) {
    /** Where the exchanges under way with another daemon learn that it went away. */
    @FunctionalInterface
    public interface Cuts {
        /**
         * Has {@code cut} called, once, with what the 503 says, when the daemon goes away before the
         * returned action runs; the exchange runs that action when it ends, whichever comes first.
         */
        Runnable onCut(Consumer<String> cut);
    }

    public Relay {
        Objects.requireNonNull(origin, "origin");
        Objects.requireNonNull(tls, "tls");
        Objects.requireNonNull(answerTimeout, "answerTimeout");
        Objects.requireNonNull(unreachable, "unreachable");
        if (retryAfterSecs < 1) {
            throw new IllegalArgumentException("a relay's retry is at least 1 s: " + retryAfterSecs);
        }
        if (!"https".equals(origin.getScheme()) || origin.getRawPath() != null && !origin.getRawPath().isEmpty()
                || origin.getRawQuery() != null) {
            throw new IllegalArgumentException("a relay's origin is https://address:port, nothing after it: " + origin);
        }
        headers = headers == null ? Map.of() : Map.copyOf(headers);
    }
}
