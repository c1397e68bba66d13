package io.vivarium.core.internal;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * When each sandbox last had activity: a request that needs its guest, or a touch
 * ({@code POST /v1/sandboxes/{id}/touch}); and which sandboxes have activity going on that no
 * request holds open in the meantime (a request forwarded to an exposed port, answered or upgraded
 * to a WebSocket that stays open): what idle demotion reads ({@link Tiers}). Kept in memory: a
 * restart starts every clock again, which is the safe side for demotion.
 */
final class IdleClocks {
    private final Map<String, Instant> touched = new ConcurrentHashMap<>();
    private final Map<String, Integer> held = new ConcurrentHashMap<>();

    void touch(String sandboxId) {
        touched.put(sandboxId, Instant.now());
    }

    /**
     * Activity on the sandbox from now until the returned action runs (at most once counts), which
     * also starts its clock again.
     */
    Runnable hold(String sandboxId) {
        touch(sandboxId);
        held.merge(sandboxId, 1, Integer::sum);
        AtomicBoolean released = new AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                held.computeIfPresent(sandboxId, (id, n) -> n == 1 ? null : n - 1);
                touch(sandboxId);
            }
        };
    }

    /** Whether activity holds the sandbox ({@link #hold}). */
    boolean held(String sandboxId) {
        return held.containsKey(sandboxId);
    }

    /** A sandbox that is gone has no clock. */
    void forget(String sandboxId) {
        touched.remove(sandboxId);
    }

    Optional<Instant> lastTouched(String sandboxId) {
        return Optional.ofNullable(touched.get(sandboxId));
    }
}
