package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.ScratchRuns;

import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * The optional seams registered under backend names ({@link Images}, {@link Checkpoints},
 * {@link PowerControl}, {@link PauseControl}, {@link ScratchRuns}), each with the bundle that
 * registered it: a backend's seam is one its own bundle registered under its name, so another
 * bundle cannot lend a backend a capability, and within a bundle a revision's seams are gone before
 * the next one registers. A component of its own (a private service core's {@link SandboxManager}
 * references), fed by one dynamic, greedy reference per seam type.
 */
@Component(service = BackendSeams.class)
public class BackendSeams {
    private static final System.Logger LOG = System.getLogger(BackendSeams.class.getName());

    private record Registered(String backend, long bundleId, long serviceId, Object seam) {
    }

    private final List<Registered> registered = new CopyOnWriteArrayList<>();

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindImages(Images seam, ServiceReference<Images> ref) {
        arrived(ref, seam);
    }

    void unbindImages(Images seam, ServiceReference<Images> ref) {
        left(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindCheckpoints(Checkpoints seam, ServiceReference<Checkpoints> ref) {
        arrived(ref, seam);
    }

    void unbindCheckpoints(Checkpoints seam, ServiceReference<Checkpoints> ref) {
        left(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindPowerControl(PowerControl seam, ServiceReference<PowerControl> ref) {
        arrived(ref, seam);
    }

    void unbindPowerControl(PowerControl seam, ServiceReference<PowerControl> ref) {
        left(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindPauseControl(PauseControl seam, ServiceReference<PauseControl> ref) {
        arrived(ref, seam);
    }

    void unbindPauseControl(PauseControl seam, ServiceReference<PauseControl> ref) {
        left(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindScratchRuns(ScratchRuns seam, ServiceReference<ScratchRuns> ref) {
        arrived(ref, seam);
    }

    void unbindScratchRuns(ScratchRuns seam, ServiceReference<ScratchRuns> ref) {
        left(ref);
    }

    private void arrived(ServiceReference<?> ref, Object seam) {
        Object name = ref.getProperty(SandboxBackend.NAME_PROPERTY);
        if (!(name instanceof String n) || n.isBlank()) {
            LOG.log(Level.WARNING, "ignoring a seam without the " + SandboxBackend.NAME_PROPERTY + " property from bundle "
                    + ref.getBundle().getSymbolicName() + ": " + seam.getClass().getName());
            return;
        }
        add(n, ref.getBundle().getBundleId(), (Long) ref.getProperty(Constants.SERVICE_ID), seam);
    }

    private void left(ServiceReference<?> ref) {
        remove((Long) ref.getProperty(Constants.SERVICE_ID));
    }

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
