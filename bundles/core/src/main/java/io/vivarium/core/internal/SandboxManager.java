package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.Caller;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.VmService;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.Designate;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * Sandbox orchestration as a component: the wiring (configuration, backends, fingerprint modes,
 * the observer) and the {@link SandboxService} it offers, each concern delegated to its own class:
 * {@link Adoption} binds sandboxes to backends, {@link SandboxLifecycle} creates and deletes them,
 * {@link GuestAccess} reaches into them, {@link ChangeSets} tracks their files (dry-runs included,
 * {@link SnapshotDryRun} for VMs), {@link Vms} is the machine view, {@link Snapshots},
 * {@link Captures} and {@link Forks} the snapshot registry. Never names a backend or a storage strategy.
 */
@Component(service = { SandboxService.class, VmService.class, SnapshotService.class })
@Designate(ocd = SandboxManager.Config.class)
public class SandboxManager implements SandboxService, VmService, SnapshotService {

    /**
     * PID {@code io.vivarium.core.internal.SandboxManager}. Each {@code __} is Declarative Services' escape for
     * one {@code _}: {@code default__backend()} reads the key {@code default_backend} that operators write (a
     * single {@code _} would read {@code default.backend}); see docs/architecture.md, "Configuration keys".
     */
    @ObjectClassDefinition(name = "Vivarium core", description = "Sandbox orchestration")
    public @interface Config {
        @AttributeDefinition(description = "State directory; empty means the framework property vivarium.state.dir")
        String state__dir() default "";

        @AttributeDefinition(description = "Backend used when a create request names none; empty means the framework "
                + "property vivarium.default.backend, or the only registered backend")
        String default__backend() default "";

        @AttributeDefinition(description = "How long a request for a sandbox whose backend is away (being upgraded) "
                + "waits for it before answering 503")
        int backend__wait__millis() default 5000;

        @AttributeDefinition(description = "Most sandboxes this host holds; a fork of more answers 503 with Retry-After "
                + "before any child starts")
        int max__sandboxes() default 1000;
    }

    private static final System.Logger LOG = System.getLogger(SandboxManager.class.getName());

    private final BackendRegistry registry = new BackendRegistry();
    private final FingerprintModes fingerprints = new FingerprintModes();
    private final Sandboxes sandboxes = new Sandboxes(() -> this.observer);
    private final Adoption adoption = new Adoption(registry, sandboxes);
    private ForkJoinPool hashPool;
    private SandboxLifecycle lifecycle;
    private GuestAccess guest;
    private Evaluation evaluation;
    private ChangeSets changeSets;
    private Vms vms;
    private Pausing pausing;
    private final StorageRegistry storage = new StorageRegistry();
    private final Snapshots snapshots = new Snapshots(registry);
    private final IdleClocks idleClocks = new IdleClocks();
    private Captures captures;
    private Forks forks;
    private volatile int maxSandboxes = 1000;
    private volatile boolean stopping;
    private volatile RuntimeObserver observer = RuntimeObserver.NONE;

    @Activate
    void activate(BundleContext context, Config config) throws IOException {
        maxSandboxes = Math.max(1, config.max__sandboxes());
        start(Path.of(firstNonEmpty(config.state__dir(), context.getProperty("vivarium.state.dir"), "var")),
                firstNonEmpty(config.default__backend(), context.getProperty("vivarium.default.backend"), ""),
                Duration.ofMillis(Math.max(0, config.backend__wait__millis())));
    }

    void start(Path stateDir, String defaultBackendName, Duration patience) throws IOException {
        hashPool = new ForkJoinPool(Runtime.getRuntime().availableProcessors());
        LiveInstances live = new LiveInstances(registry, sandboxes, adoption, patience);
        lifecycle = new SandboxLifecycle(registry, sandboxes, adoption, defaultBackendName, patience, () -> stopping);
        guest = new GuestAccess(sandboxes, live);
        evaluation = new Evaluation(registry, sandboxes, live);
        Checkpointing checkpointing = new Checkpointing(sandboxes, () -> stopping);
        SnapshotDryRun snapshotDryRun = new SnapshotDryRun(sandboxes, checkpointing);
        changeSets = new ChangeSets(registry, sandboxes, live, fingerprints,
                new ChangeTracker(fingerprints, new HostLister(hashPool)), snapshotDryRun);
        vms = new Vms(registry, sandboxes, lifecycle, live, checkpointing);
        pausing = new Pausing(registry, sandboxes, live);
        adoption.afterAdoption(sb -> {
            try {
                snapshotDryRun.replay(sb, patience);
            } catch (ApiException busy) {
                // a dry-run of this sandbox is running (re-adoption after a bundle update): it finishes itself
                LOG.log(Level.DEBUG, "not replaying the dry-run intent of " + sb.record().id() + ": " + busy.getMessage());
            }
        });
        captures = new Captures(snapshots, sandboxes, lifecycle, live, guest, storage, () -> stopping);
        forks = new Forks(snapshots, sandboxes, lifecycle, storage, () -> maxSandboxes);
        adoption.start(stateDir.toAbsolutePath());
        List<SnapshotRecord> interrupted = snapshots.open(sandboxes.state(), stateDir.toAbsolutePath());
        SnapshotBuilders.removeLeftOvers(interrupted, lifecycle);
        LOG.log(Level.INFO, "core started with " + sandboxes.size() + " sandbox record(s) in " + stateDir);
    }

    @Deactivate
    void deactivate() {
        stopping = true;
        adoption.stop();
        hashPool.shutdownNow();
    }

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindObserver(RuntimeObserver o) {
        observer = o;
    }

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
    void bindStorage(StorageStrategy strategy, ServiceReference<StorageStrategy> ref) {
        storage.add((Long) ref.getProperty(Constants.SERVICE_ID), strategy);
    }

    void unbindStorage(StorageStrategy strategy, ServiceReference<StorageStrategy> ref) {
        storage.remove((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    void storageArrived(long serviceId, StorageStrategy strategy) {
        storage.add(serviceId, strategy);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindBackend(SandboxBackend backend, ServiceReference<SandboxBackend> ref) {
        Object name = ref.getProperty(SandboxBackend.NAME_PROPERTY);
        if (!(name instanceof String n) || n.isBlank()) {
            LOG.log(Level.WARNING, "ignoring a SandboxBackend without the " + SandboxBackend.NAME_PROPERTY
                    + " property from bundle " + ref.getBundle().getSymbolicName());
            return;
        }
        backendArrived(new BackendRegistry.Entry(n, backend, ref.getBundle().getSymbolicName(),
                ref.getBundle().getVersion().toString(), (Long) ref.getProperty(Constants.SERVICE_ID)));
    }

    void unbindBackend(SandboxBackend backend, ServiceReference<SandboxBackend> ref) {
        backendLeft((Long) ref.getProperty(Constants.SERVICE_ID));
    }

    void backendArrived(BackendRegistry.Entry entry) {
        adoption.backendArrived(entry);
    }

    void backendLeft(long serviceId) {
        adoption.backendLeft(serviceId);
    }

    @Override
    public SandboxInfo create(Caller caller, CreateSandboxRequest request) {
        return lifecycle.create(caller, request);
    }

    @Override
    public List<SandboxInfo> list(Caller caller) {
        return sandboxes.list(caller);
    }

    @Override
    public List<SandboxInfo> census() {
        return sandboxes.all().stream()
                .filter(sb -> !sb.deleted())
                .map(SandboxManager::withUsage)
                .sorted(Sandboxes.ORDER)
                .toList();
    }

    @Override
    public SandboxInfo get(Caller caller, String id) {
        return withUsage(sandboxes.find(caller, id));
    }

    private static SandboxInfo withUsage(Sandbox sb) {
        SandboxInfo info = sb.info();
        SandboxInstance instance = sb.instance();
        return instance == null ? info : usage(sb, instance).map(info::withUsage).orElse(info);
    }

    /** The instance's usage; a backend failing to measure it never fails the request that shows it. */
    private static Optional<ResourceUsage> usage(Sandbox sb, SandboxInstance instance) {
        try {
            return instance.usage();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "measuring the usage of sandbox " + sb.record().id() + " failed", e);
            return Optional.empty();
        }
    }

    @Override
    public void delete(Caller caller, String id) {
        lifecycle.delete(caller, id);
    }

    @Override
    public PingResult ping(Caller caller, String id) {
        return guest.ping(caller, id);
    }

    @Override
    public ExecResult exec(Caller caller, String id, ExecRequest request) {
        return guest.exec(caller, id, request);
    }

    @Override
    public EvalResult eval(Caller caller, String id, EvalRequest request) {
        return evaluation.eval(caller, id, request);
    }

    @Override
    public SandboxInfo pause(Caller caller, String id) {
        return pausing.pause(caller, id);
    }

    @Override
    public SandboxInfo resume(Caller caller, String id) {
        return pausing.resume(caller, id);
    }

    @Override
    public byte[] readFile(Caller caller, String id, String path) {
        return guest.readFile(caller, id, path);
    }

    @Override
    public void writeFile(Caller caller, String id, String path, byte[] content) {
        guest.writeFile(caller, id, path, content);
    }

    @Override
    public List<BackendInfo> backends() {
        return registry.all().stream().map(e -> {
            Availability a = e.backend().availability();
            int count = (int) sandboxes.all().stream()
                    .filter(sb -> sb.record().backend().equals(e.name())).count();
            return new BackendInfo(e.name(), e.bundle(), e.version(), e.backend().capabilities(), a.available(),
                    a.reason(), count, details(e));
        }).toList();
    }

    /** A backend's details; one that fails to say (or says null) never breaks the listing of all. */
    private static Map<String, String> details(BackendRegistry.Entry e) {
        try {
            Map<String, String> d = new LinkedHashMap<>(e.backend().details());
            d.values().removeIf(Objects::isNull);
            d.remove(null);
            return d;
        } catch (RuntimeException ex) {
            LOG.log(Level.WARNING, "backend " + e.name() + " failed to report its details", ex);
            return Map.of();
        }
    }

    @Override
    public BaselineResult baseline(Caller caller, String id, BaselineRequest request) {
        return changeSets.baseline(caller, id, request);
    }

    @Override
    public ChangeSet changes(Caller caller, String id, ChangesRequest request) {
        return changeSets.changes(caller, id, request);
    }

    @Override
    public DryRunResult dryRun(Caller caller, String id, DryRunRequest request) {
        return changeSets.dryRun(caller, id, request);
    }

    @Override
    public SandboxInfo createVm(Caller caller, CreateSandboxRequest request) {
        return vms.create(caller, request);
    }

    @Override
    public List<SandboxInfo> listVms(Caller caller) {
        return vms.list(caller);
    }

    @Override
    public SandboxInfo getVm(Caller caller, String id) {
        return withUsage(vms.find(caller, id));
    }

    @Override
    public void deleteVm(Caller caller, String id) {
        vms.delete(caller, id);
    }

    @Override
    public SandboxInfo stopVm(Caller caller, String id) {
        return vms.stop(caller, id);
    }

    @Override
    public SandboxInfo startVm(Caller caller, String id) {
        return vms.start(caller, id);
    }

    @Override
    public CheckpointInfo snapshotVm(Caller caller, String id, CheckpointRequest request) {
        return vms.snapshot(caller, id, request);
    }

    @Override
    public SandboxInfo restoreVm(Caller caller, String id, CheckpointRequest request) {
        return vms.restore(caller, id, request);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request) {
        return captures.build(caller, request);
    }

    @Override
    public List<SnapshotInfo> snapshots(Caller caller) {
        return snapshots.list(caller);
    }

    @Override
    public SnapshotInfoDetail info(Caller caller, String tag) {
        return snapshots.detail(snapshots.find(caller, tag));
    }

    @Override
    public void deleteSnapshot(Caller caller, String tag, boolean cascade, boolean force) {
        snapshots.delete(caller, tag, cascade, force);
    }

    @Override
    public SnapshotInfo compact(Caller caller, String tag, CompactRequest request) {
        return captures.compact(caller, tag, request);
    }

    @Override
    public List<SandboxInfo> fork(Caller caller, ForkRequest request) {
        return forks.fork(caller, request);
    }

    @Override
    public SnapshotInfo branch(Caller caller, String id, BranchRequest request) {
        return captures.branch(caller, id, request);
    }

    @Override
    public void touch(Caller caller, String id) {
        idleClocks.touch(sandboxes.find(caller, id).record().id());
    }

    void maxSandboxes(int max) {
        maxSandboxes = max;
    }

    private static String firstNonEmpty(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return "";
    }
}
