package io.vivarium.core.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.api.ApiException;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;

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
 * Sandbox orchestration: keeps every sandbox's record, binds it to its backend whenever that
 * backend is registered (re-adopting running instances after a restart or a bundle update), and
 * serialises lifecycle operations per sandbox. Never names a backend.
 */
@Component(service = SandboxService.class)
@Designate(ocd = SandboxManager.Config.class)
public class SandboxManager implements SandboxService {

    @ObjectClassDefinition(name = "Vivarium core", description = "Sandbox orchestration")
    public @interface Config {
        @AttributeDefinition(description = "State directory; empty means the framework property vivarium.state.dir")
        String state_dir() default "";

        @AttributeDefinition(description = "Backend used when a create request names none; empty means the framework "
                + "property vivarium.default.backend, or the only registered backend")
        String default_backend() default "";

        @AttributeDefinition(description = "How long a request for a sandbox whose backend is away (being upgraded) "
                + "waits for it before answering 503")
        int backend_wait_millis() default 5000;
    }

    private static final System.Logger LOG = System.getLogger(SandboxManager.class.getName());
    /** How long a backend may take to create an instance (a VM boot under TCG included). */
    private static final Duration CREATE_DEADLINE = Duration.ofMinutes(5);

    private final BackendRegistry registry = new BackendRegistry();
    private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();
    private final FingerprintModes fingerprints = new FingerprintModes();
    private final Object reconcile = new Object();
    private ForkJoinPool hashPool;
    private ChangeTracker tracker;
    private SandboxStore store;
    private String defaultBackend;
    private Duration backendWait;
    private volatile boolean stopping;
    private volatile RuntimeObserver observer = RuntimeObserver.NONE;

    @Activate
    void activate(BundleContext context, Config config) throws IOException {
        start(Path.of(firstNonEmpty(config.state_dir(), context.getProperty("vivarium.state.dir"), "var")),
                firstNonEmpty(config.default_backend(), context.getProperty("vivarium.default.backend"), ""),
                Duration.ofMillis(Math.max(0, config.backend_wait_millis())));
    }

    void start(Path stateDir, String defaultBackendName, Duration patience) throws IOException {
        defaultBackend = defaultBackendName;
        backendWait = patience;
        hashPool = new ForkJoinPool(Runtime.getRuntime().availableProcessors());
        tracker = new ChangeTracker(fingerprints, new HostLister(hashPool));
        synchronized (reconcile) {
            store = new SandboxStore(stateDir.toAbsolutePath());
            for (SandboxRecord r : store.loadAll((file, e) -> LOG.log(Level.ERROR,
                    "cannot read sandbox record " + file + "; leaving it alone: " + e))) {
                sandboxes.put(r.id(), new Sandbox(r));
            }
            for (BackendRegistry.Entry e : registry.all()) {
                adoptAll(e);
            }
        }
        LOG.log(Level.INFO, "core started with " + sandboxes.size() + " sandbox record(s) in " + stateDir);
    }

    @Deactivate
    void deactivate() {
        stopping = true;
        synchronized (reconcile) {
            sandboxes.clear();
            store = null;
        }
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

    /**
     * Publishes the backend, then adopts its sandboxes one by one. A request for a sandbox that
     * the sweep has not reached yet adopts that one itself ({@link #liveInstance}), so after an
     * upgrade a request waits for its own sandbox's adoption, not for every sandbox's.
     */
    void backendArrived(BackendRegistry.Entry entry) {
        synchronized (reconcile) {
            registry.add(entry);
            if (store != null) {
                adoptAll(entry);
            }
        }
    }

    void backendLeft(long serviceId) {
        synchronized (reconcile) {
            registry.remove(serviceId);
            sandboxes.values().forEach(sb -> sb.detachFrom(serviceId));
        }
    }

    private void adoptAll(BackendRegistry.Entry e) {
        for (Sandbox sb : sandboxes.values()) {
            if (sb.record().backend().equals(e.name())) {
                adoptIfDetached(sb, e);
            }
        }
    }

    /** Adopts the sandbox's instance from {@code e} unless a request or the sweep did already. */
    private void adoptIfDetached(Sandbox sb, BackendRegistry.Entry e) {
        sb.lifecycle.lock();
        try {
            if (!sb.deleted() && !sb.attachedTo(e.serviceId())) {
                adopt(sb, e);
            }
        } finally {
            sb.lifecycle.unlock(observer);
        }
    }

    /**
     * Attaches an instance of {@code e} unless {@code e} has left meanwhile: {@link #backendLeft}
     * unregisters before it detaches, so either it detaches this attach or this sees it gone.
     */
    private void attachIfCurrent(Sandbox sb, SandboxInstance instance, BackendRegistry.Entry e) {
        sb.attach(instance, e.serviceId());
        if (registry.get(e.name()).filter(now -> now.serviceId() == e.serviceId()).isEmpty()) {
            sb.detachFrom(e.serviceId());
        }
    }

    private void adopt(Sandbox sb, BackendRegistry.Entry e) {
        SandboxRecord r = sb.record();
        InstanceSpec spec = sb.spec(store);
        if (SandboxRecord.CREATING.equals(r.phase())) {
            LOG.log(Level.WARNING, "sandbox " + r.id() + " was being created when the daemon stopped; removing it");
            e.backend().destroy(spec, emptyState());
            forget(sb);
            return;
        }
        if (r.status() == SandboxStatus.FAILED) {
            return;
        }
        try {
            attachIfCurrent(sb, e.backend().adopt(spec, r.state()), e);
        } catch (InstanceGoneException gone) {
            fail(sb, "found dead when " + e.name() + " " + e.version() + " re-adopted it: " + gone.getMessage());
        } catch (RuntimeException ex) {
            LOG.log(Level.ERROR, "adopting sandbox " + r.id() + " failed", ex);
            fail(sb, "could not be re-adopted by " + e.name() + " " + e.version() + ": " + ex.getMessage());
        }
    }

    private void fail(Sandbox sb, String why) {
        SandboxRecord failed = sb.record().failed(why);
        sb.record(failed);
        sb.attach(null, -1);
        try {
            persist(failed);
        } catch (IOException io) {
            LOG.log(Level.ERROR, "cannot persist failure of sandbox " + failed.id(), io);
        }
        LOG.log(Level.WARNING, "sandbox " + failed.id() + " " + why);
    }

    private void persist(SandboxRecord r) throws IOException {
        long start = System.nanoTime();
        store.save(r);
        observer.stateWritten(System.nanoTime() - start);
    }

    private void forget(Sandbox sb) {
        sb.markDeleted();
        sandboxes.remove(sb.record().id());
        try {
            store.remove(sb.record().id());
        } catch (IOException io) {
            LOG.log(Level.ERROR, "cannot remove files of sandbox " + sb.record().id(), io);
        }
    }

    @Override
    public SandboxInfo create(Caller caller, CreateSandboxRequest request) {
        try {
            SandboxInfo created = createSandbox(caller, request);
            observer.sandboxCreated(CreateOutcome.OK);
            return created;
        } catch (RuntimeException e) {
            observer.sandboxCreated(outcomeOf(e));
            throw e;
        }
    }

    /** A capacity refusal is a 503 with Retry-After: "the host is full" apart from "it is broken". */
    static CreateOutcome outcomeOf(RuntimeException failure) {
        if (failure instanceof ApiException a) {
            if (a.status() == 503 && a.retryAfterSeconds() != null) {
                return CreateOutcome.REFUSED;
            }
            if (a.status() >= 400 && a.status() < 500) {
                return CreateOutcome.INVALID;
            }
        }
        return CreateOutcome.FAILED;
    }

    private SandboxInfo createSandbox(Caller caller, CreateSandboxRequest request) {
        CreateSandboxRequest req = request == null ? new CreateSandboxRequest(null, null) : request;
        BackendRegistry.Entry e = chooseBackend(req.backend());
        Availability availability = e.backend().availability();
        if (!availability.available()) {
            throw new ApiException(503, "backend " + e.name() + " cannot create sandboxes on this host: "
                    + availability.reason());
        }
        CreateRequests.check(req, e.name(), e.backend().capabilities());
        String id = SandboxIds.next();
        var record = new SandboxRecord(id, caller.tenant(), e.name(), Instant.now().getEpochSecond(),
                req.memoryLimitMib(), req.vcpus(), req.image(), req.pidsLimit(), req.diskLimitMib(),
                SandboxRecord.CREATING, emptyState(),
                SandboxStatus.RUNNING, null);
        Sandbox sb = new Sandbox(record);
        sb.lifecycle.lock();
        try {
            try {
                store.createDir(id);
                persist(record);
            } catch (IOException io) {
                throw ApiException.internal("cannot write sandbox record under " + store.dirOf(id), io);
            }
            sandboxes.put(id, sb);
            InstanceSpec spec = sb.spec(store);
            SandboxInstance instance;
            try {
                instance = e.backend().create(spec, new CoreOperation("creating sandbox " + id,
                        Instant.now().plus(CREATE_DEADLINE), () -> stopping));
            } catch (RuntimeException ex) {
                throw undoCreate(sb, e, emptyState(), ex);
            }
            SandboxRecord created = record.created(instance.state());
            try {
                persist(created);
            } catch (IOException io) {
                throw undoCreate(sb, e, instance.state(), ApiException.internal("cannot persist sandbox record " + id, io));
            }
            sb.record(created);
            // if the backend left during create, the next one to arrive adopts the recorded instance
            attachIfCurrent(sb, instance, e);
            return sb.info();
        } finally {
            sb.lifecycle.unlock(observer);
        }
    }

    /** Removes what a failed create left; the original failure is what the caller sees. */
    private RuntimeException undoCreate(Sandbox sb, BackendRegistry.Entry e, InstanceState state, RuntimeException cause) {
        try {
            e.backend().destroy(sb.spec(store), state);
        } catch (RuntimeException destroyFailure) {
            cause.addSuppressed(destroyFailure);
        } finally {
            forget(sb);
        }
        return cause;
    }

    /**
     * The named backend; else the configured default; else the only registered one (waiting a
     * bounded time for one to register at start-up). Several and no default is a 400 that lists them.
     */
    private BackendRegistry.Entry chooseBackend(String requested) {
        String name = requested;
        if (name == null || name.isEmpty()) {
            name = defaultBackend;
        }
        if (name.isEmpty()) {
            List<BackendRegistry.Entry> all = registry.awaitAny(backendWait);
            if (all.size() == 1) {
                return all.get(0);
            }
            throw ApiException.badRequest(all.isEmpty()
                    ? "no backend is installed: enable one (GET /v1/features) and retry"
                    : "backend is required: several are installed and no default is configured; choose one of: "
                            + installedNames());
        }
        String n = name;
        return registry.await(n, backendWait).orElseThrow(() -> ApiException.badRequest(
                "backend " + n + " is not installed (installed: " + installedNames() + ")"));
    }

    private String installedNames() {
        List<String> names = registry.all().stream().map(BackendRegistry.Entry::name).toList();
        return names.isEmpty() ? "none" : String.join(", ", names);
    }

    @Override
    public List<SandboxInfo> list(Caller caller) {
        return sandboxes.values().stream()
                .filter(sb -> sb.record().tenant().equals(caller.tenant()))
                .map(Sandbox::info)
                .sorted(Comparator.comparingLong(SandboxInfo::createdAtUnix).thenComparing(SandboxInfo::id))
                .toList();
    }

    @Override
    public List<SandboxInfo> census() {
        return sandboxes.values().stream()
                .filter(sb -> !sb.deleted())
                .map(SandboxManager::withUsage)
                .sorted(Comparator.comparingLong(SandboxInfo::createdAtUnix).thenComparing(SandboxInfo::id))
                .toList();
    }

    @Override
    public SandboxInfo get(Caller caller, String id) {
        return withUsage(find(caller, id));
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
        Sandbox sb = find(caller, id);
        // wait outside the lock: a backend arriving meanwhile takes it to re-adopt this sandbox
        registry.await(sb.record().backend(), backendWait);
        sb.lifecycle.lock();
        try {
            if (sb.deleted()) {
                throw notFound(id);
            }
            SandboxRecord r = sb.record();
            Optional<BackendRegistry.Entry> e = registry.get(r.backend());
            if (e.isEmpty()) {
                throw ApiException.unavailable("backend " + r.backend() + " of sandbox " + id
                        + " is not registered; retry when it is back (GET /v1/backends)", 2);
            }
            e.get().backend().destroy(sb.spec(store), r.state());
            forget(sb);
            observer.sandboxDeleted();
        } finally {
            sb.lifecycle.unlock(observer);
        }
    }

    @Override
    public PingResult ping(Caller caller, String id) {
        return liveInstance(find(caller, id)).channel().ping();
    }

    @Override
    public ExecResult exec(Caller caller, String id, ExecRequest request) {
        Sandbox sb = find(caller, id);
        SandboxInstance instance = liveInstance(sb);
        ExecRequest complete = ExecRequests.complete(request, instance.workspace());
        long channelMax = instance.channel().limits().maxOutputBytes();
        if (complete.maxOutputBytes() > channelMax) {
            throw ApiException.badRequest("max_output_bytes " + complete.maxOutputBytes() + " is more than backend "
                    + sb.record().backend() + " can return (" + channelMax + " bytes per stream)");
        }
        return instance.channel().exec(complete);
    }

    @Override
    public byte[] readFile(Caller caller, String id, String path) {
        String p = filePath(path);
        GuestChannel channel = liveInstance(find(caller, id)).channel();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            channel.readFile(p, Math.min(MAX_FILE_BYTES, channel.limits().maxFileBytes()), out);
        } catch (IOException e) {
            throw ApiException.internal("cannot read " + p + " from sandbox " + id + ": " + e.getMessage(), e);
        }
        return out.toByteArray();
    }

    @Override
    public void writeFile(Caller caller, String id, String path, byte[] content) {
        String p = filePath(path);
        GuestChannel channel = liveInstance(find(caller, id)).channel();
        long max = Math.min(MAX_FILE_BYTES, channel.limits().maxFileBytes());
        if (content.length > max) {
            throw new ApiException(413, "file is " + content.length + " bytes; at most " + max + " can be written");
        }
        channel.writeFile(p, content);
    }

    /** A file path as a caller names it: absolute, no {@code ..}, no control characters, not a directory. */
    private static String filePath(String path) {
        if (path == null || path.isEmpty()) {
            throw ApiException.badRequest("path is required: the absolute path of a file in the sandbox, "
                    + "e.g. ?path=/work/notes.txt");
        }
        String p = SandboxPaths.normalise(path);
        if (p.equals("/") || path.endsWith("/")) {
            throw ApiException.badRequest("path must name a file, not a directory: \"" + path + "\"");
        }
        return p;
    }

    /** The sandbox's running instance, waiting a bounded time for a backend that is being swapped. */
    private SandboxInstance liveInstance(Sandbox sb) {
        String id = sb.record().id();
        long deadline = System.nanoTime() + backendWait.toNanos();
        while (true) {
            if (sb.deleted()) {
                throw notFound(id);
            }
            if (sb.record().status() == SandboxStatus.FAILED) {
                throw ApiException.conflict("sandbox " + id + " has failed (" + sb.record().reason()
                        + "); delete it and create a new one");
            }
            SandboxInstance instance = sb.instance();
            if (instance == null) {
                // its backend may be back with the sweep not at this sandbox yet: adopt it now
                Optional<BackendRegistry.Entry> e = registry.get(sb.record().backend());
                if (e.isPresent()) {
                    adoptIfDetached(sb, e.get());
                    instance = sb.instance();
                    if (instance == null && (sb.deleted() || sb.record().status() == SandboxStatus.FAILED)) {
                        continue;
                    }
                }
            }
            if (instance != null) {
                if (!instance.alive()) {
                    markDead(sb, instance);
                    continue;
                }
                return instance;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw ApiException.unavailable("backend " + sb.record().backend() + " of sandbox " + id
                        + " is not available right now (being upgraded or stopped); retry shortly", 2);
            }
            registry.await(sb.record().backend(), Duration.ofNanos(Math.min(left, 50_000_000L)));
            if (sb.instance() == null) {
                sleepQuietly(Math.min(left, 10_000_000L));
            }
        }
    }

    private void markDead(Sandbox sb, SandboxInstance instance) {
        sb.lifecycle.lock();
        try {
            if (sb.instance() == instance && !sb.deleted()) {
                fail(sb, "its processes are gone (init pid " + instance.state().pid() + " exited)");
            }
        } finally {
            sb.lifecycle.unlock(observer);
        }
    }

    private Sandbox find(Caller caller, String id) {
        SandboxIds.check(id);
        Sandbox sb = sandboxes.get(id);
        if (sb == null || sb.deleted() || !sb.record().tenant().equals(caller.tenant())) {
            throw notFound(id);
        }
        return sb;
    }

    private static ApiException notFound(String id) {
        return ApiException.notFound("no sandbox " + id);
    }

    @Override
    public List<BackendInfo> backends() {
        return registry.all().stream().map(e -> {
            Availability a = e.backend().availability();
            int count = (int) sandboxes.values().stream()
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
        Sandbox sb = find(caller, id);
        return tracker.baseline(store.dirOf(id), liveInstance(sb), request.paths());
    }

    @Override
    public ChangeSet changes(Caller caller, String id, ChangesRequest request) {
        Sandbox sb = find(caller, id);
        return tracker.changes(store.dirOf(id), liveInstance(sb), request == null ? null : request.paths());
    }

    @Override
    public DryRunResult dryRun(Caller caller, String id, DryRunRequest request) {
        if (request.command() == null || request.command().isBlank()) {
            throw ApiException.badRequest("command is required: a shell command line, e.g. \"rm -rf build\"");
        }
        List<String> paths = SandboxPaths.check(request.paths());
        Sandbox sb = find(caller, id);
        SandboxInstance instance = liveInstance(sb);
        SandboxBackend backend = registry.get(sb.record().backend()).map(BackendRegistry.Entry::backend)
                .orElseThrow(() -> ApiException.unavailable("backend " + sb.record().backend() + " went away", 2));
        if (!backend.capabilities().dryRun()) {
            throw ApiException.notImplemented("backend " + sb.record().backend() + " cannot dry-run commands");
        }
        if (!sb.dryRunning.compareAndSet(false, true)) {
            throw ApiException.conflict("a dry-run is already running on sandbox " + id + "; wait for it to finish");
        }
        try {
            FingerprintMode mode = fingerprints.best();
            int filesBefore = tracker.countBeforeDryRun(instance, paths);
            ExecRequest exec = ExecRequests.complete(new ExecRequest(List.of("sh", "-c", request.command()),
                    request.timeoutSecs(), null, null, null, null), instance.workspace());
            long startedAt = Instant.now().getEpochSecond();
            ScratchRun run = backend.dryRun(instance, exec);
            ChangeSet changes;
            try {
                changes = tracker.compare(run, paths, mode, filesBefore, startedAt);
            } catch (RuntimeException e) {
                discardAfterFailure(run, e);
                throw e;
            }
            run.close();
            ExecResult r = run.result();
            return new DryRunResult(r.stdout(), r.stderr(), r.exitCode(), r.timedOut(), r.truncated(), r.durationMs(),
                    changes, true, run.mechanism());
        } finally {
            sb.dryRunning.set(false);
        }
    }

    private static void discardAfterFailure(ScratchRun run, RuntimeException cause) {
        try {
            run.close();
        } catch (RuntimeException closeFailure) {
            throw ApiException.internal(cause.getMessage() + "; and discarding the dry-run's effects failed too, so "
                    + "they may remain: " + closeFailure.getMessage(), closeFailure);
        }
    }

    private static InstanceState emptyState() {
        return new InstanceState(0, Map.of());
    }

    private static void sleepQuietly(long nanos) {
        try {
            Thread.sleep(Duration.ofNanos(nanos));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted while waiting for the backend", 1, ie);
        }
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
