package io.vivarium.core.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

/**
 * A sandbox core knows of: its persisted record and, while its backend is registered, the live
 * instance. Lifecycle operations (create, adopt, delete) hold {@link #lifecycle} briefly; execs and
 * long operations (restore, dry-run) pass through {@link #gate} instead, so they never block an
 * upgrade's re-adoption.
 */
final class Sandbox {
    final LifecycleLock lifecycle = new LifecycleLock();
    final OperationGate gate;
    /** Held while its tier changes ({@link Tiers}): a demotion and a request's promotion never cross. */
    final Object tierLock = new Object();
    private volatile SandboxRecord record;
    /** The store's revision of {@link #record}, 0 until it is stored. */
    private volatile long revision;
    private volatile SandboxInstance instance;
    private volatile long backendServiceId = -1;
    /**
     * The instance of a backend service that went away, kept for guest calls while the next one is
     * not here yet (only one whose channel outlives its backend); null otherwise.
     */
    private volatile SandboxInstance leaving;
    private volatile long leavingServiceId = -1;
    private volatile boolean deleted;

    Sandbox(SandboxRecord record, long revision) {
        this.record = record;
        this.revision = revision;
        this.gate = new OperationGate(record.id());
    }

    SandboxRecord record() {
        return record;
    }

    long revision() {
        return revision;
    }

    /** Holds {@code r}, stored as {@code storedRevision}; callers hold the lifecycle lock. */
    void record(SandboxRecord r, long storedRevision) {
        record = r;
        revision = storedRevision;
    }

    SandboxInstance instance() {
        return instance;
    }

    synchronized void attach(SandboxInstance i, long serviceId) {
        instance = i;
        backendServiceId = serviceId;
        leaving = null;
    }

    /**
     * Puts {@code after} in place of {@code before} (a restore that relaunched, a stop), from the
     * same backend service; does nothing if {@code before} is no longer attached (its backend left).
     */
    synchronized void replace(SandboxInstance before, SandboxInstance after) {
        if (instance == before) {
            instance = after;
        }
    }

    /** {@link #detachFrom(long, boolean)}, keeping an instance whose channel outlives its backend. */
    synchronized boolean detachFrom(long serviceId) {
        return detachFrom(serviceId, true);
    }

    /**
     * Forgets the instance if it came from the backend service that is going away, keeping it as
     * the {@link #leaving} one if {@code keep} and its channel outlives its backend.
     *
     * @return whether it was kept
     */
    synchronized boolean detachFrom(long serviceId, boolean keep) {
        if (backendServiceId != serviceId) {
            return false;
        }
        leaving = keep && instance != null && instance.channelOutlivesBackend() ? instance : null;
        leavingServiceId = serviceId;
        instance = null;
        backendServiceId = -1;
        return leaving != null;
    }

    /** The instance whose backend left, if its channel outlives it and no other was attached since. */
    SandboxInstance leaving() {
        return leaving;
    }

    /** Lets go of the instance backend service {@code serviceId} left, so that it pins no old revision. */
    synchronized void forgetLeaving(long serviceId) {
        if (leavingServiceId == serviceId) {
            leaving = null;
        }
    }

    /** Whether it holds an instance from the backend service {@code serviceId}. */
    synchronized boolean attachedTo(long serviceId) {
        return instance != null && backendServiceId == serviceId;
    }

    boolean deleted() {
        return deleted;
    }

    synchronized void markDeleted() {
        deleted = true;
        instance = null;
        leaving = null;
    }

    InstanceSpec spec(SandboxDirs dirs) {
        return new InstanceSpec(record.id(), dirs.dirOf(record.id()), record.memoryLimitMib(), record.vcpus(),
                record.image(), record.pidsLimit(), record.diskLimitMib(), record.network(), record.resolver(),
                dirs.volumesOf(record), record.root() == null ? null : record.root().image());
    }

    /**
     * 409 for an operation that would have to put back the files of a volume this sandbox may
     * write: those files outlive the sandbox and are shared with the next one that mounts it.
     */
    void refuseWritableVolume(String operation) {
        record.writableVolume().ifPresent(v -> {
            throw ApiException.conflict("sandbox " + record.id() + " mounts volume " + v.name() + " writable, whose files "
                    + "a " + operation + " cannot put back; mount it read_only to " + operation + " this sandbox");
        });
    }

    SandboxStatus status() {
        if (record.status() == SandboxStatus.FAILED || record.status() == SandboxStatus.STOPPED) {
            return record.status();
        }
        SandboxInstance i = instance;
        return i == null ? SandboxStatus.BACKEND_UNAVAILABLE : i.status();
    }

    /** Why a live instance died, as its backend says, else by its pid. */
    static String deathOf(SandboxInstance i) {
        String reason = i.reason();
        return reason != null ? reason : "its processes are gone (init pid " + i.state().pid() + " exited)";
    }

    SandboxInfo info() {
        SandboxRecord r = record;
        SandboxInstance i = instance;
        SandboxStatus status = status();
        String reason = switch (status) {
            case FAILED -> r.status() == SandboxStatus.FAILED || i == null ? r.reason() : deathOf(i);
            case STOPPED -> i == null ? null : i.reason();
            case BACKEND_UNAVAILABLE -> "backend " + r.backend() + " is not registered right now";
            case RUNNING, PAUSED -> null;
        };
        return new SandboxInfo(r.id(), r.backend(), r.tenant(), status.wire(), r.createdAtUnix(),
                r.state() == null ? 0 : r.state().pid(), r.memoryLimitMib(), i == null ? null : i.workspace(), reason,
                r.vcpus(), r.image(), null, r.snapshotTag(), r.network() == null ? NetworkPolicy.ISOLATED : r.network(),
                r.mounts(), Tiers.tierOf(status, r.demoted()), r.idle(), r.template());
    }
}
