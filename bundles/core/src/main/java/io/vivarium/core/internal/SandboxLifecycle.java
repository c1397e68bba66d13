package io.vivarium.core.internal;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.IdlePolicy;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.testpoints.TestPoints;
import io.vivarium.api.state.Stored;

/**
 * Creating and deleting sandboxes: choosing the backend, recording a create before the backend
 * starts it (so a crash midway is cleaned up at start-up), and undoing what a failed create left.
 */
final class SandboxLifecycle {
    /** How long a backend may take to create an instance (a VM boot under TCG included). */
    private static final Duration CREATE_DEADLINE = Duration.ofMinutes(5);

    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final Adoption adoption;
    private final StorageRegistry storage;
    private volatile String defaultBackend;
    private volatile NetworkRules network = NetworkRules.NONE;
    private volatile IdleRules idle = IdleRules.NEVER;
    private volatile Templates templates;
    private volatile ClientBackends clientBackends = ClientBackends.EVERY;
    private final Duration backendWait;
    private final BooleanSupplier stopping;
    private final Capacity capacity;
    private final Volumes volumes;

    SandboxLifecycle(BackendRegistry registry, Sandboxes sandboxes, Adoption adoption, StorageRegistry storage,
            String defaultBackend, Duration backendWait, BooleanSupplier stopping, Capacity capacity, Volumes volumes) {
        this.capacity = capacity;
        this.volumes = volumes;
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.adoption = adoption;
        this.storage = storage;
        this.defaultBackend = defaultBackend;
        this.backendWait = backendWait;
        this.stopping = stopping;
    }

    /** The operator's network policy from now on (sandboxes already made keep theirs). */
    void networkRules(NetworkRules rules) {
        network = rules;
    }

    /** The operator's idle policy from now on (sandboxes already made keep theirs). */
    void idleRules(IdleRules rules) {
        idle = rules;
    }

    /** The backend of a create that names none, from now on (a configuration change). */
    void defaultBackend(String name) {
        defaultBackend = name;
    }

    /**
     * A create through {@code POST /v1/sandboxes}, or through {@code POST /v1/vms} ({@code
     * machineRoute}): only the latter may make an instance of a backend of plain machines
     * ({@link io.vivarium.api.spi.SandboxBackend#sandboxes()} false).
     */
    SandboxInfo create(Caller caller, CreateSandboxRequest request, boolean machineRoute) {
        try {
            SandboxInfo created = createSandbox(caller, request, machineRoute);
            sandboxes.observer().sandboxCreated(CreateOutcome.OK);
            return created;
        } catch (RuntimeException e) {
            sandboxes.observer().sandboxCreated(outcomeOf(e));
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

    private SandboxInfo createSandbox(Caller caller, CreateSandboxRequest request, boolean machineRoute) {
        CreateSandboxRequest asked = request == null ? new CreateSandboxRequest(null, null) : request;
        Templates.Use use = asked.template() == null ? null : templates.use(asked);
        if (use == null) {
            checkNamed(caller, asked.backend());
        }
        if (use != null && use.fromSetup()) {
            return templates.createFromSetup(caller, use);
        }
        CreateSandboxRequest req = use == null ? asked : use.request();
        BackendRegistry.Entry e = chooseBackend(req.backend());
        if (!machineRoute && !e.backend().sandboxes()) {
            throw ApiException.badRequest("backend " + e.name() + " runs plain virtual machines, not sandboxes: create "
                    + "them with POST /v1/vms");
        }
        checkAvailable(e);
        check(req, e);
        try (Capacity.Reservation place = capacity.reserve(1)) {
            return createOn(caller, e, req, null, place, fresh(e), true, use == null ? null : use.root());
        }
    }

    /** Checks a create on {@code e} (a template's too) against what {@code e} can do here. */
    void check(CreateSandboxRequest req, BackendRegistry.Entry e) {
        CreateRequests.check(req, e.name(), e.capabilities());
        VolumeRequests.check(req.volumes(), e.name(), e.capabilities());
        if (req.template() != null && !e.capabilities().contains(Capability.ROOT_IMAGE)) {
            throw ApiException.badRequest("backend " + e.name() + " cannot start a sandbox on a template's image (it does "
                    + "not report " + Capability.ROOT_IMAGE + "); name a backend that does (GET /v1/backends)");
        }
        network.resolve(req.network(), e.name(), e.capabilities());
        idle.resolve(req.idle(), e.name(), e.capabilities().contains(Capability.HIBERNATE));
    }

    /** The backends clients may name from now on. */
    void clientBackends(ClientBackends allowed) {
        clientBackends = allowed;
    }

    /** 403 when {@code caller} may not name {@code backend} (a create or build that names one). */
    void checkNamed(Caller caller, String backend) {
        clientBackends.check(caller, backend);
    }

    /** Whether clients may name {@code backend}, as {@code GET /v1/backends} says. */
    boolean clientsMayName(String backend) {
        return clientBackends.allows(backend);
    }

    /** The templates sandboxes may be made from. */
    void templates(Templates all) {
        templates = all;
    }

    /** Makes a fresh instance on {@code e}, whose artifacts core's storage strategies store. */
    InstanceMaker fresh(BackendRegistry.Entry e) {
        return (spec, context) -> e.backend().create(spec, storage, context);
    }

    /** Room for {@code n} sandboxes about to be created, before anything starts; a 503 with Retry-After if the host is full. */
    Capacity.Reservation reserve(int n) {
        return capacity.reserve(n);
    }

    void checkAvailable(BackendRegistry.Entry e) {
        Availability availability = availability(e);
        if (!availability.available()) {
            throw new ApiException(503, "backend " + e.name() + " cannot create sandboxes on this host: "
                    + availability.reason());
        }
    }

    /**
     * Whether {@code e} can create sandboxes now: what it says of this host, and a storage strategy
     * installed for each kind of artifact its create stores.
     */
    Availability availability(BackendRegistry.Entry e) {
        Availability said = e.backend().availability();
        if (!said.available()) {
            return said;
        }
        for (ArtifactKind kind : e.backend().storedKinds()) {
            if (!storage.handles(kind)) {
                return Availability.no("no storage strategy for its " + StorageRegistry.name(kind) + " artifacts is "
                        + "installed: enable the feature that brings one (GET /v1/features)");
            }
        }
        return said;
    }

    /** Makes the instance of a sandbox being created: a fresh one, or a child of an image. */
    interface InstanceMaker {
        SandboxInstance make(InstanceSpec spec, OperationContext context);
    }

    /**
     * Creates a sandbox on {@code e} (already checked) whose instance {@code maker} makes, recorded
     * before it is made so that a crash midway is cleaned up at start-up, in one of the places
     * {@code place} reserved.
     *
     * @param snapshotTag the tag a forked child is made from (its image), or null for a create of {@code req.image()}
     */
    SandboxInfo createOn(Caller caller, BackendRegistry.Entry e, CreateSandboxRequest req, String snapshotTag,
            Capacity.Reservation place, InstanceMaker maker) {
        return createOn(caller, e, req, snapshotTag, place, maker, true);
    }

    /**
     * {@link #createOn}, for a sandbox that is never demoted while idle when {@code demotable} is false
     * (a snapshot's builder: a pause during its setup or boot wait would capture a half-booted guest).
     */
    SandboxInfo createOn(Caller caller, BackendRegistry.Entry e, CreateSandboxRequest req, String snapshotTag,
            Capacity.Reservation place, InstanceMaker maker, boolean demotable) {
        return createOn(caller, e, req, snapshotTag, place, maker, demotable, null);
    }

    /** {@link #createOn}, for a sandbox of a template that runs on {@code root} (null: the backend's own). */
    SandboxInfo createOn(Caller caller, BackendRegistry.Entry e, CreateSandboxRequest req, String snapshotTag,
            Capacity.Reservation place, InstanceMaker maker, boolean demotable, TemplateRoot root) {
        NetworkRules rules = network;
        NetworkPolicy policy = rules.resolve(req.network(), e.name(), e.capabilities());
        IdlePolicy idlePolicy = demotable ? idle.resolve(req.idle(), e.name(), e.capabilities().contains(Capability.HIBERNATE))
                : null;
        String id = SandboxIds.next();
        SandboxDirs dirs = sandboxes.dirs();
        var record = new SandboxRecord(id, caller.tenant(), e.name(), Instant.now().getEpochSecond(),
                req.memoryLimitMib(), req.vcpus(), snapshotTag != null ? snapshotTag : req.image(), req.pidsLimit(),
                req.diskLimitMib(), SandboxRecord.CREATING, Adoption.emptyState(),
                SandboxStatus.RUNNING, null, e.backend().machine(), snapshotTag, policy,
                policy.egress() ? rules.resolver() : null, null, req.volumes().isEmpty() ? null : req.volumes(), idlePolicy,
                null, !req.volumes().isEmpty() && e.capabilities().contains(Capability.VOLUME_DISKS) ? Boolean.TRUE : null,
                req.template(), root);
        Sandbox sb = new Sandbox(record, Stored.ABSENT);
        sb.lifecycle.lock();
        try {
            try {
                dirs.createDir(id);
                sandboxes.persistCreating(sb, record);
            } catch (IOException io) {
                throw ApiException.internal("cannot write sandbox record under " + dirs.dirOf(id), io);
            }
            place.admit(() -> sandboxes.add(sb));
            TestPoints.reach("create.recorded");
            InstanceSpec spec = sb.spec(dirs);
            SandboxInstance instance;
            try {
                volumes.attach(record);
                instance = maker.make(spec, new CoreOperation("creating sandbox " + id,
                        Instant.now().plus(CREATE_DEADLINE), stopping));
            } catch (RuntimeException ex) {
                throw undoCreate(sb, e, Adoption.emptyState(), ex);
            }
            TestPoints.reach("create.made");
            try {
                sandboxes.persist(sb, record.created(instance.state()));
            } catch (IOException io) {
                throw undoCreate(sb, e, instance.state(), ApiException.internal("cannot persist sandbox record " + id, io));
            } catch (ApiException storeAway) {
                throw undoCreate(sb, e, instance.state(), storeAway);
            }
            adoption.attachIfCurrent(sb, instance, e);
            return sb.info();
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }

    /** Removes what a failed create left; the original failure is what the caller sees. */
    private RuntimeException undoCreate(Sandbox sb, BackendRegistry.Entry e, InstanceState state, RuntimeException cause) {
        try {
            e.backend().destroy(sb.spec(sandboxes.dirs()), state);
        } catch (RuntimeException destroyFailure) {
            cause.addSuppressed(destroyFailure);
        } finally {
            sandboxes.forget(sb, true);
        }
        return cause;
    }

    /**
     * The named backend; else the configured default; else the only registered one (waiting a
     * bounded time for one to register at start-up). Several and no default is a 400 that lists them.
     */
    BackendRegistry.Entry chooseBackend(String requested) {
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

    /** Waits (bounded) for a restore, dry-run or other exclusive operation on it to end, then 409; ends its execs. */
    void delete(Caller caller, String id) {
        delete(caller, id, false);
    }

    /** {@link #delete(Caller, String)}; with {@code force}, through the backend's {@code destroyForcibly}. */
    void delete(Caller caller, String id, boolean force) {
        Sandbox sb = sandboxes.find(caller, id);
        sb.gate.ending("delete", backendWait, () -> {
            delete(sb, id, force);
            return null;
        });
    }

    private void delete(Sandbox sb, String id, boolean force) {
        // wait outside the lock: a backend arriving meanwhile takes it to re-adopt this sandbox
        registry.await(sb.record().backend(), backendWait);
        sb.lifecycle.lock();
        try {
            if (sb.deleted()) {
                throw Sandboxes.notFound(id);
            }
            SandboxRecord r = sb.record();
            Optional<BackendRegistry.Entry> e = registry.get(r.backend());
            if (e.isEmpty()) {
                throw ApiException.unavailable("backend " + r.backend() + " of sandbox " + id
                        + " is not registered; retry when it is back (GET /v1/backends)", 2);
            }
            if (force) {
                e.get().backend().destroyForcibly(sb.spec(sandboxes.dirs()), r.state());
            } else {
                e.get().backend().destroy(sb.spec(sandboxes.dirs()), r.state());
            }
            sandboxes.forget(sb, false);
            sandboxes.observer().sandboxDeleted();
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }
}
