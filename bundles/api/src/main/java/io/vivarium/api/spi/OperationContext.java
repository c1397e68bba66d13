package io.vivarium.api.spi;

import java.time.Duration;
import java.time.Instant;

import io.vivarium.api.ApiException;

import org.osgi.annotation.versioning.ProviderType;

/**
 * What core hands a backend with a long call (creating a VM, booting it, restoring a snapshot):
 * when the caller stops waiting, whether the call was cancelled (the client went away, the daemon
 * is stopping), and where to report progress. Backends check it between steps and stop early,
 * cleaning up what they made, with {@link #checkpoint(String)}. Provided by core. Since 1.2.
 */
@ProviderType
public interface OperationContext {

    /** When the caller stops waiting; work past it is wasted. */
    Instant deadline();

    /** True once the operation is cancelled; the backend should undo what it did and return. */
    boolean cancelled();

    /**
     * Reports that {@code step} is under way (a short phrase such as {@code "booting the guest"});
     * {@code fraction} is 0 to 1, or negative when unknown. Cheap; may be called often.
     */
    void progress(String step, double fraction);

    /** Time left before {@link #deadline()}, never negative. */
    default Duration remaining() {
        Duration left = Duration.between(Instant.now(), deadline());
        return left.isNegative() ? Duration.ZERO : left;
    }

    /**
     * Reports {@code step} and throws if the operation was cancelled (503 with {@code Retry-After}:
     * the daemon is stopping) or is past its deadline (504), so that a backend can write
     * {@code ctx.checkpoint("waiting for the agent")} between steps.
     */
    default void checkpoint(String step) {
        if (cancelled()) {
            throw ApiException.unavailable("cancelled while " + step + " (the daemon is stopping); retry", 5);
        }
        if (!Instant.now().isBefore(deadline())) {
            throw new ApiException(504, "timed out while " + step);
        }
        progress(step, -1);
    }

    /** A context with a deadline, never cancelled, that drops progress: for callers with nothing better. */
    static OperationContext until(Instant deadline) {
        return new OperationContext() {
            @Override
            public Instant deadline() {
                return deadline;
            }

            @Override
            public boolean cancelled() {
                return false;
            }

            @Override
            public void progress(String step, double fraction) {
            }
        };
    }
}
