package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.Caller;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.ApiException;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.RuntimeObserver;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.Designate;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * Sandbox orchestration as a component: the wiring (configuration, backends and their optional
 * seams, storage strategies, fingerprint modes, the observer), the {@link Core} it owns and shares,
 * and the {@link SandboxService} it offers, each
 * concern delegated to its own class: {@link Adoption} binds sandboxes to backends,
 * {@link SandboxLifecycle} creates and deletes them within {@link Capacity}, {@link GuestAccess}
 * reaches into them, {@link ChangeSets} tracks their files (dry-runs included, {@link CheckpointDryRun}
 * for VMs). The machine view ({@link VmManager}) and the snapshot registry ({@link SnapshotManager})
 * are components of their own that reference this one, internally, for its {@link Core}. Never names
 * a backend or a storage strategy.
 */
@Component(service = { SandboxService.class, SandboxManager.class }, configurationPid = SandboxManager.PID)
@Designate(ocd = SandboxManager.Config.class)
public class SandboxManager extends CoreReferences implements SandboxService {
    /** Core's one configuration, read by this component and {@link SnapshotManager}. */
    static final String PID = "io.vivarium.core.internal.SandboxManager";

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

        @AttributeDefinition(description = "Most sandboxes this host holds (all tenants); a create or fork that would "
                + "pass it answers 503 with Retry-After before anything starts")
        int max__sandboxes() default 1000;

        @AttributeDefinition(description = "Seconds a branch may take before it answers 504 and leaves no tag (the "
                + "reference API's 180)")
        int branch__timeout__secs() default SnapshotService.BRANCH_TIMEOUT_SECS;

        @AttributeDefinition(description = "The network a sandbox gets when its create names none: none (loopback "
                + "only) or egress (to network_allow); empty means the framework property vivarium.network.default, else none")
        String network__default() default "";

        @AttributeDefinition(description = "Comma-separated IPv4 CIDRs, each with an optional :PORT, that egress sandboxes "
                + "may reach at most (a client's allow entries must lie inside them); empty means the framework property "
                + "vivarium.network.allow, else none")
        String network__allow() default "";

        @AttributeDefinition(description = "Seconds a sandbox may be idle (no request that needs its guest, no touch) "
                + "before it is paused, memory kept, and resumed by its next such request; 0 for never. A create may "
                + "ask for less (idle.pause_after_secs), never more; 0 means the framework property "
                + "vivarium.idle.pause.after.secs, else never")
        int idle__pause__after__secs() default 0;

        @AttributeDefinition(description = "Seconds a sandbox may stay idle before its state goes to disk and its "
                + "memory is freed (the cold tier), where its backend can (hibernate); 0 for never. A create may ask "
                + "for less (idle.cold_after_secs), never more; 0 means the framework property "
                + "vivarium.idle.cold.after.secs, else never")
        int idle__cold__after__secs() default 0;

        @AttributeDefinition(description = "The DNS resolver (an IPv4 address) egress sandboxes resolve names through; "
                + "empty means the framework property vivarium.network.resolver, else none")
        String network__resolver() default "";

        @AttributeDefinition(description = "The backends a client may name at create without a template: all, or a "
                + "comma-separated list (a template names its own, an operator may name any); empty means the framework "
                + "property vivarium.client.backends (which serve --client-backends sets), else all")
        String client__backends() default "";
    }

    private static final System.Logger LOG = System.getLogger(SandboxManager.class.getName());

    private final Sandboxes sandboxes = new Sandboxes(this::observer);
    private final Adoption adoption = new Adoption(registry, sandboxes);
    private ForkJoinPool hashPool;
    private final Capacity capacity = new Capacity(sandboxes, () -> this.maxSandboxes);
    private SandboxLifecycle lifecycle;
    private GuestAccess guest;
    private Evaluation evaluation;
    private ChangeSets changeSets;
    private Pausing pausing;
    private Tiers tiers;
    private Checkpointing checkpointing;
    private volatile Templates templates;
    private Core core;
    private volatile int maxSandboxes = 1000;
    private volatile boolean stopping;

    @Activate
    void activate(BundleContext context, Config config) throws IOException {
        maxSandboxes = Math.max(1, config.max__sandboxes());
        start(stateDir(context, config), defaultBackend(context, config),
                Duration.ofMillis(Math.max(0, config.backend__wait__millis())));
        lifecycle.networkRules(networkRules(context, config));
        lifecycle.idleRules(idleRules(context, config));
        lifecycle.clientBackends(clientBackends(context, config));
    }

    /**
     * A configuration change (e.g. a {@code .cfg} that FileInstall applies a moment after the daemon
     * answers) updates what can change in place, instead of restarting core, and with it the VM and
     * snapshot components and the API surface, under requests in flight. The state directory and
     * {@code backend_wait_millis} are read at activation only.
     */
    @Modified
    void modified(BundleContext context, Config config) {
        maxSandboxes = Math.max(1, config.max__sandboxes());
        lifecycle.defaultBackend(defaultBackend(context, config));
        lifecycle.networkRules(networkRules(context, config));
        lifecycle.idleRules(idleRules(context, config));
        lifecycle.clientBackends(clientBackends(context, config));
        if (!stateDir(context, config).toAbsolutePath().equals(core.stateDir())) {
            LOG.log(Level.WARNING, "state_dir changed to " + stateDir(context, config) + ": it takes effect when the "
                    + "daemon starts again; core keeps " + core.stateDir());
        }
    }

    private static Path stateDir(BundleContext context, Config config) {
        return Path.of(firstNonEmpty(config.state__dir(), context.getProperty("vivarium.state.dir"), "var"));
    }

    /** The operator's network settings; settings that do not parse leave every sandbox without a network, said in the log. */
    private static NetworkRules networkRules(BundleContext context, Config config) {
        try {
            return NetworkRules.of(firstNonEmpty(config.network__default(), context.getProperty("vivarium.network.default"), ""),
                    firstNonEmpty(config.network__allow(), context.getProperty("vivarium.network.allow"), ""),
                    firstNonEmpty(config.network__resolver(), context.getProperty("vivarium.network.resolver"), ""));
        } catch (IllegalArgumentException e) {
            LOG.log(Level.ERROR, "the network settings are wrong, so sandboxes get no network until they are fixed: "
                    + e.getMessage());
            return NetworkRules.NONE;
        }
    }

    /** The operator's idle policy; a negative time (which does not parse as a policy) demotes nothing, said in the log. */
    private static IdleRules idleRules(BundleContext context, Config config) {
        try {
            return new IdleRules(secsOr(config.idle__pause__after__secs(), context, "vivarium.idle.pause.after.secs"),
                    secsOr(config.idle__cold__after__secs(), context, "vivarium.idle.cold.after.secs"));
        } catch (IllegalArgumentException e) {
            LOG.log(Level.ERROR, "the idle settings are wrong, so no sandbox is demoted until they are fixed: " + e.getMessage());
            return IdleRules.NEVER;
        }
    }

    /** {@code configured}, or when 0 the framework property {@code property}, else 0. */
    private static int secsOr(int configured, BundleContext context, String property) {
        String value = context.getProperty(property);
        return configured == 0 && value != null && !value.isBlank() ? Integer.parseInt(value.strip()) : configured;
    }

    private static ClientBackends clientBackends(BundleContext context, Config config) {
        return ClientBackends.of(firstNonEmpty(config.client__backends(), context.getProperty("vivarium.client.backends"), ""));
    }

    private static String defaultBackend(BundleContext context, Config config) {
        return firstNonEmpty(config.default__backend(), context.getProperty("vivarium.default.backend"), "");
    }

    void start(Path stateDir, String defaultBackendName, Duration patience) throws IOException {
        hashPool = new ForkJoinPool(Runtime.getRuntime().availableProcessors());
        tiers = new Tiers(registry, sandboxes);
        LiveInstances live = new LiveInstances(registry, sandboxes, adoption, patience, tiers);
        adoption.keepLeavingInstancesFor(patience);
        Volumes volumes = new Volumes(sandboxes, new HostVolumes(), stateDir.toAbsolutePath());
        sandboxes.onForget(r -> {
            tiers.forget(r);
            volumes.detach(r);
        });
        lifecycle = new SandboxLifecycle(registry, sandboxes, adoption, storage, defaultBackendName, patience,
                () -> stopping, capacity, volumes);
        templates = new Templates(sandboxes, this::rootImages, req -> lifecycle.check(req, lifecycle.chooseBackend(req.backend())));
        lifecycle.templates(templates);
        guest = new GuestAccess(sandboxes, live);
        evaluation = new Evaluation(registry, sandboxes, live);
        checkpointing = new Checkpointing(registry, sandboxes, live, () -> stopping);
        ChangeTracker tracker = new ChangeTracker(fingerprints, new HostLister(hashPool));
        CheckpointDryRun checkpointDryRun = new CheckpointDryRun(sandboxes, checkpointing, tracker);
        changeSets = new ChangeSets(registry, sandboxes, live, fingerprints, tracker, checkpointDryRun);
        pausing = new Pausing(registry, sandboxes, live, tiers);
        adoption.afterAdoption(sb -> {
            try {
                checkpointDryRun.replay(sb, patience);
            } catch (ApiException busy) {
                // a dry-run of this sandbox is running (re-adoption after a bundle update): it finishes itself
                LOG.log(Level.DEBUG, "not replaying the dry-run intent of " + sb.record().id() + ": " + busy.getMessage());
            }
        });
        adoption.start(stateDir.toAbsolutePath(), stateStores(), stateStoreName());
        volumes.reconcile();
        templates.start();
        tiers.start();
        core = new Core(registry, storage, sandboxes, lifecycle, live, guest, checkpointing, volumes, templates, pausing, stateDir.toAbsolutePath(),
                () -> stopping);
        LOG.log(Level.INFO, "core started with " + sandboxes.size() + " sandbox record(s) in "
                + stateStores().describe(stateDir.toAbsolutePath()));
    }

    /** What the VM and snapshot components share with this one; set once activated. */
    Core core() {
        return core;
    }

    @Deactivate
    void deactivate() {
        stopping = true;
        tiers.stop();
        templates.stop();
        adoption.stop();
        hashPool.shutdownNow();
    }

    @Override
    void backendArrived(BackendRegistry.Entry entry) {
        adoption.backendArrived(entry);
    }

    @Override
    void rootImagesArrived() {
        Templates t = templates;
        if (t != null) {
            t.imagesArrived();
        }
    }

    @Override
    void observerArrived(RuntimeObserver o) {
        sandboxes.tellStoreHealth(o);
    }

    @Override
    void backendLeft(long serviceId) {
        adoption.backendLeft(serviceId);
    }

    @Override
    public SandboxInfo create(Caller caller, CreateSandboxRequest request) {
        NodeChoice.refuse(request == null ? null : request.nodeId());
        return lifecycle.create(caller, request, false);
    }

    @Override
    public List<SandboxInfo> list(Caller caller) {
        return sandboxes.list(caller);
    }

    @Override
    public List<SandboxInfo> census() {
        return sandboxes.all().stream()
                .filter(sb -> !sb.deleted())
                .map(Usage::infoOf)
                .sorted(Sandboxes.ORDER)
                .toList();
    }

    @Override
    public SandboxInfo get(Caller caller, String id) {
        return Usage.infoOf(sandboxes.find(caller, id));
    }

    @Override
    public void delete(Caller caller, String id) {
        lifecycle.delete(caller, id);
    }

    @Override
    public void delete(Caller caller, String id, boolean force) {
        lifecycle.delete(caller, id, force);
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
    public CheckpointInfo checkpoint(Caller caller, String id, CheckpointRequest request) {
        String tag = Checkpointing.checkNewTag(request == null ? null : request.tag());
        return checkpointing.create(sandboxes.find(caller, id), tag);
    }

    @Override
    public SandboxInfo restoreCheckpoint(Caller caller, String id, String tag) {
        return checkpointing.restore(sandboxes.find(caller, id), Checkpointing.checkTag(tag));
    }

    @Override
    public List<CheckpointInfo> checkpoints(Caller caller, String id) {
        return checkpointing.list(sandboxes.find(caller, id));
    }

    @Override
    public void deleteCheckpoint(Caller caller, String id, String tag) {
        checkpointing.delete(sandboxes.find(caller, id), Checkpointing.checkTag(tag));
    }

    @Override
    public List<BackendInfo> backends() {
        return registry.all().stream().map(e -> {
            Availability a = lifecycle.availability(e);
            int count = (int) sandboxes.all().stream()
                    .filter(sb -> sb.record().backend().equals(e.name())).count();
            return new BackendInfo(e.name(), e.bundle(), e.version(), e.capabilities(), e.backend().machine(),
                    a.available(), a.reason(), count, details(e), lifecycle.clientsMayName(e.name()));
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
