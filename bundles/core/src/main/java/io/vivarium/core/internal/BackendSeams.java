package io.vivarium.core.internal;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

/**
 * The optional seams registered under backend names ({@link io.vivarium.api.spi.Images},
 * {@link io.vivarium.api.spi.Checkpoints}, ...), each with the bundle that registered it: a
 * backend's seam is one its own bundle registered under its name, so another bundle cannot lend a
 * backend a capability, and within a bundle a revision's seams are gone before the next registers.
 *
 * <p>Each seam is held with a test of whether its service is still registered, and one that is not
 * is dropped at the next look: Declarative Services delivers a service's registration to each
 * reference in turn, so a bundle that registers a seam and then its backend (which waits for it)
 * can be stopped again while the seam's registration is still on its way to core, whose bind then
 * comes after the unbind (measured: LeakIT's 20 updates in a row kept a stale seam, and with it a
 * whole procbox revision).
 */
final class BackendSeams {

    private record Registered(String backend, long bundleId, long serviceId, Object seam, BooleanSupplier live) {
    }

    private final List<Registered> registered = new CopyOnWriteArrayList<>();

    /** Adds {@code seam}, registered as long as {@code live} says so. */
    void add(String backend, long bundleId, long serviceId, Object seam, BooleanSupplier live) {
        dropDead();
        if (live.getAsBoolean()) {
            registered.add(new Registered(backend, bundleId, serviceId, seam, live));
        }
    }

    void remove(long serviceId) {
        registered.removeIf(r -> r.serviceId() == serviceId);
    }

    private void dropDead() {
        registered.removeIf(r -> !r.live().getAsBoolean());
    }

    /** The newest seam of {@code type} that bundle {@code bundleId} registered for {@code backend}. */
    <T> Optional<T> find(String backend, long bundleId, Class<T> type) {
        dropDead();
        return registered.stream()
                .filter(r -> r.backend().equals(backend) && r.bundleId() == bundleId && type.isInstance(r.seam()))
                .max(Comparator.comparingLong(Registered::serviceId))
                .map(r -> type.cast(r.seam()));
    }
}
