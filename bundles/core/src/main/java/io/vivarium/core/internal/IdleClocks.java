package io.vivarium.core.internal;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * When each sandbox last had activity: a request that needs its guest, or a touch
 * ({@code POST /v1/sandboxes/{id}/touch}); what idle demotion reads ({@link Tiers}). Kept in
 * memory: a restart starts every clock again, which is the safe side for demotion.
 */
final class IdleClocks {
    private final Map<String, Instant> touched = new ConcurrentHashMap<>();

    void touch(String sandboxId) {
        touched.put(sandboxId, Instant.now());
    }

    /** A sandbox that is gone has no clock. */
    void forget(String sandboxId) {
        touched.remove(sandboxId);
    }

    Optional<Instant> lastTouched(String sandboxId) {
        return Optional.ofNullable(touched.get(sandboxId));
    }
}
