package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.RootImages;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.ScratchRuns;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.state.StateStoreProvider;

import org.osgi.framework.Bundle;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * The services core's {@link SandboxManager} component is wired to, as its dynamic references:
 * the backends and the optional seams their bundles register under their names, the storage
 * strategies, the fingerprint modes and the observer. Kept apart from what the component does with
 * them (bnd reads these annotations through {@code -dsannotations-options: inherit}); the same
 * component instance, so a seam is bound and unbound exactly as the backend beside it.
 */
abstract class CoreReferences {
    private static final System.Logger LOG = System.getLogger(CoreReferences.class.getName());

    final BackendRegistry registry = new BackendRegistry(new BackendSeams());
    final StorageRegistry storage = new StorageRegistry();
    final FingerprintModes fingerprints = new FingerprintModes();
    private volatile RuntimeObserver observer = RuntimeObserver.NONE;
    private volatile StateStoreProvider stateStores;
    private volatile String stateStoreName = "file";
    private volatile RootImages rootImages;

    /** A backend service registered: adopt its sandboxes. */
    abstract void backendArrived(BackendRegistry.Entry entry);

    /** The backend service {@code serviceId} left: detach its instances (never kill them). */
    abstract void backendLeft(long serviceId);

    RuntimeObserver observer() {
        return observer;
    }

    StateStoreProvider stateStores() {
        return stateStores;
    }

    /** The chosen store's name ({@link StateStoreProvider#NAME}), for metrics. */
    String stateStoreName() {
        return stateStoreName;
    }

    /** The store the operator chose (only that store's bundle registers a provider): core starts on it and stops without it. */
    @Reference
    void bindStateStores(StateStoreProvider p, Map<String, Object> properties) {
        stateStores = p;
        stateStoreName = String.valueOf(properties.getOrDefault(StateStoreProvider.NAME, "file"));
    }

    /** The images bundle templates are built with (images-oci), while one is installed. */
    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindRootImages(RootImages images) {
        rootImages = images;
        rootImagesArrived();
    }

    /** An images bundle was bound (installed, or updated). */
    abstract void rootImagesArrived();

    void unbindRootImages(RootImages images) {
        if (rootImages == images) {
            rootImages = null;
        }
    }

    Optional<RootImages> rootImages() {
        return Optional.ofNullable(rootImages);
    }

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindObserver(RuntimeObserver o) {
        observer = o;
        observerArrived(o);
    }

    /** An observer was bound (the metrics bundle started after core, or was updated). */
    abstract void observerArrived(RuntimeObserver o);

    void unbindObserver(RuntimeObserver o) {
        if (observer == o) {
            observer = RuntimeObserver.NONE;
        }
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindFingerprint(FingerprintMode mode, ServiceReference<FingerprintMode> ref) {
        fingerprintArrived((Long) ref.getProperty(Constants.SERVICE_ID), mode);
    }

    void unbindFingerprint(FingerprintMode mode, ServiceReference<FingerprintMode> ref) {
        fingerprints.remove((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    void fingerprintArrived(long serviceId, FingerprintMode mode) {
        fingerprints.add(serviceId, mode);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindBackend(SandboxBackend backend, ServiceReference<SandboxBackend> ref) {
        if (ref.getBundle() == null) {
            return; // unregistered before its registration reached this reference (see BackendSeams)
        }
        Object name = ref.getProperty(SandboxBackend.NAME_PROPERTY);
        if (!(name instanceof String n) || n.isBlank()) {
            LOG.log(Level.WARNING, "ignoring a SandboxBackend without the " + SandboxBackend.NAME_PROPERTY
                    + " property from bundle " + ref.getBundle().getSymbolicName());
            return;
        }
        backendArrived(registry.entry(n, backend, ref.getBundle().getSymbolicName(),
                ref.getBundle().getVersion().toString(), (Long) ref.getProperty(Constants.SERVICE_ID),
                ref.getBundle().getBundleId()));
    }

    void unbindBackend(SandboxBackend backend, ServiceReference<SandboxBackend> ref) {
        backendLeft((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    /** A registry entry for a backend service, for {@link #backendArrived} (and tests, without a framework). */
    BackendRegistry.Entry entry(String name, SandboxBackend backend, String bundle, String version, long serviceId,
            long bundleId) {
        return registry.entry(name, backend, bundle, version, serviceId, bundleId);
    }

    // The optional seams: each a service of its own under its backend's name (SandboxBackend.NAME_PROPERTY).

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindImages(Images seam, ServiceReference<Images> ref) {
        seamArrived(ref, seam);
    }

    void unbindImages(Images seam, ServiceReference<Images> ref) {
        seamLeft(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindCheckpoints(Checkpoints seam, ServiceReference<Checkpoints> ref) {
        seamArrived(ref, seam);
    }

    void unbindCheckpoints(Checkpoints seam, ServiceReference<Checkpoints> ref) {
        seamLeft(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindPowerControl(PowerControl seam, ServiceReference<PowerControl> ref) {
        seamArrived(ref, seam);
    }

    void unbindPowerControl(PowerControl seam, ServiceReference<PowerControl> ref) {
        seamLeft(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindPauseControl(PauseControl seam, ServiceReference<PauseControl> ref) {
        seamArrived(ref, seam);
    }

    void unbindPauseControl(PauseControl seam, ServiceReference<PauseControl> ref) {
        seamLeft(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindHibernation(Hibernation seam, ServiceReference<Hibernation> ref) {
        seamArrived(ref, seam);
    }

    void unbindHibernation(Hibernation seam, ServiceReference<Hibernation> ref) {
        seamLeft(ref);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindScratchRuns(ScratchRuns seam, ServiceReference<ScratchRuns> ref) {
        seamArrived(ref, seam);
    }

    void unbindScratchRuns(ScratchRuns seam, ServiceReference<ScratchRuns> ref) {
        seamLeft(ref);
    }

    private void seamArrived(ServiceReference<?> ref, Object seam) {
        Object name = ref.getProperty(SandboxBackend.NAME_PROPERTY);
        if (!(name instanceof String n) || n.isBlank()) {
            LOG.log(Level.WARNING, "ignoring a seam without the " + SandboxBackend.NAME_PROPERTY + " property from bundle "
                    + ref.getBundle().getSymbolicName() + ": " + seam.getClass().getName());
            return;
        }
        Bundle bundle = ref.getBundle();
        if (bundle != null) {
            registry.seams().add(n, bundle.getBundleId(), (Long) ref.getProperty(Constants.SERVICE_ID), seam,
                    () -> ref.getBundle() != null);
        }
    }

    private void seamLeft(ServiceReference<?> ref) {
        seamLeft((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    /** Registers {@code seam} for backend {@code name} as bundle {@code bundleId} did (tests, without a framework). */
    void seamArrived(String name, long bundleId, long serviceId, Object seam) {
        registry.seams().add(name, bundleId, serviceId, seam, () -> true);
    }

    void seamLeft(long serviceId) {
        registry.seams().remove(serviceId);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindStorage(StorageStrategy strategy, ServiceReference<StorageStrategy> ref) {
        storageArrived((Long) ref.getProperty(Constants.SERVICE_ID), strategy);
    }

    void unbindStorage(StorageStrategy strategy, ServiceReference<StorageStrategy> ref) {
        storage.remove((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    void storageArrived(long serviceId, StorageStrategy strategy) {
        storage.add(serviceId, strategy);
    }

}
