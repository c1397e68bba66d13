package io.vivarium.core.internal;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The optional seams registered under backend names ({@link io.vivarium.api.spi.Images},
 * {@link io.vivarium.api.spi.Checkpoints}, ...), each with the bundle that registered it: a
 * backend's seam is one its own bundle registered under its name, so another bundle cannot lend a
 * backend a capability, and within a bundle a revision's seams are gone before the next registers.
 */
final class BackendSeams {

    private record Registered(String backend, long bundleId, long serviceId, Object seam) {
    }

    private final List<Registered> registered = new CopyOnWriteArrayList<>();

    void add(String backend, long bundleId, long serviceId, Object seam) {
        registered.add(new Registered(backend, bundleId, serviceId, seam));
    }

    void remove(long serviceId) {
        registered.removeIf(r -> r.serviceId() == serviceId);
    }

    /** The newest seam of {@code type} that bundle {@code bundleId} registered for {@code backend}. */
    <T> Optional<T> find(String backend, long bundleId, Class<T> type) {
        return registered.stream()
                .filter(r -> r.backend().equals(backend) && r.bundleId() == bundleId && type.isInstance(r.seam()))
                .max(Comparator.comparingLong(Registered::serviceId))
                .map(r -> type.cast(r.seam()));
    }
}
