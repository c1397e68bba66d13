package io.vivarium.core.internal;

import java.util.function.IntSupplier;

import io.vivarium.api.ApiException;

/**
 * The host's room for sandboxes ({@code max_sandboxes}, all tenants): every create, plain, VM,
 * snapshot builder or forked child, reserves its place before anything starts, and a reservation
 * becomes a sandbox when the sandbox is added to the registry. Reserving and adding share one lock,
 * so concurrent creates never overshoot the limit.
 */
final class Capacity {
    static final int RETRY_AFTER_SECS = 10;

    private final Sandboxes sandboxes;
    private final IntSupplier max;
    private int reserved;

    Capacity(Sandboxes sandboxes, IntSupplier max) {
        this.sandboxes = sandboxes;
        this.max = max;
    }

    /** Room for {@code n} more sandboxes, or a 503 with Retry-After. */
    synchronized Reservation reserve(int n) {
        int limit = max.getAsInt();
        int held = sandboxes.size();
        if (held + reserved + n > limit) {
            throw ApiException.noCapacity("this host holds at most " + limit + " sandboxes (max_sandboxes) and has "
                    + held + (reserved > 0 ? " with " + reserved + " more being created" : "") + "; " + n
                    + (n == 1 ? " more does" : " more do") + " not fit: delete some" + (n > 1 ? " or ask for fewer" : "")
                    + " and retry", RETRY_AFTER_SECS);
        }
        reserved += n;
        return new Reservation(n);
    }

    /** Places reserved and not yet used; closing it gives back what was not used. */
    final class Reservation implements AutoCloseable {
        private int left;

        private Reservation(int n) {
            left = n;
        }

        /** Adds a sandbox in one of the reserved places. */
        void admit(Runnable add) {
            synchronized (Capacity.this) {
                if (left == 0) {
                    throw new IllegalStateException("no reserved place left");
                }
                add.run();
                left--;
                reserved--;
            }
        }

        @Override
        public void close() {
            synchronized (Capacity.this) {
                reserved -= left;
                left = 0;
            }
        }
    }
}
