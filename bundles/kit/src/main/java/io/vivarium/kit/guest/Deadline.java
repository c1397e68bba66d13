package io.vivarium.kit.guest;

import java.time.Duration;

/**
 * The instant by which a call must have returned. Every call of the client takes one; socket reads,
 * writes, connects and waits for a lock or a deferred answer all stop at it.
 */
public final class Deadline {
    private final long endNanos;

    private Deadline(long endNanos) {
        this.endNanos = endNanos;
    }

    public static Deadline after(Duration duration) {
        return new Deadline(System.nanoTime() + Math.max(0, duration.toNanos()));
    }

    /** The earlier of this deadline and {@code duration} from now. */
    public Deadline atMost(Duration duration) {
        Deadline other = after(duration);
        return other.endNanos - endNanos < 0 ? other : this;
    }

    public long remainingNanos() {
        return Math.max(0, endNanos - System.nanoTime());
    }

    /** Milliseconds left, at least 1 while not expired (so it can be passed as a blocking timeout). */
    public long remainingMillis() {
        long nanos = remainingNanos();
        return nanos == 0 ? 0 : Math.max(1, nanos / 1_000_000);
    }

    /**
     * For {@code Selector.select(long)}, where 0 means "wait forever": at least 1 ms, so a deadline
     * that passes between the caller's check and the select still wakes the caller.
     */
    long selectMillis() {
        return Math.max(1, remainingMillis());
    }

    public boolean expired() {
        return remainingNanos() == 0;
    }

    /** Throws the 504 the caller sees if the deadline has passed. */
    public void check(String doing) {
        if (expired()) {
            throw GuestAgentException.deadline(doing);
        }
    }
}
