package io.vivarium.core.internal;

import java.util.concurrent.atomic.AtomicBoolean;

import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

/**
 * A sandbox core knows of: its persisted record and, while its backend is registered, the live
 * instance. Lifecycle operations (create, adopt, delete) hold {@link #lifecycle}; execs do not, so
 * a long exec never blocks an upgrade's re-adoption.
 */
final class Sandbox {
    final LifecycleLock lifecycle = new LifecycleLock();
    /** Set while a dry-run runs: one at a time per sandbox. */
    final AtomicBoolean dryRunning = new AtomicBoolean();
    private volatile SandboxRecord record;
    private volatile SandboxInstance instance;
    private volatile long backendServiceId = -1;
    private volatile boolean deleted;

    Sandbox(SandboxRecord record) {
        this.record = record;
    }

    SandboxRecord record() {
        return record;
    }

    void record(SandboxRecord r) {
        record = r;
    }

    SandboxInstance instance() {
        return instance;
    }

    synchronized void attach(SandboxInstance i, long serviceId) {
        instance = i;
        backendServiceId = serviceId;
    }

    /** Forgets the instance if it came from the backend service that is going away. */
    synchronized void detachFrom(long serviceId) {
        if (backendServiceId == serviceId) {
            instance = null;
            backendServiceId = -1;
        }
    }

    /** Whether it holds an instance from the backend service {@code serviceId}. */
    synchronized boolean attachedTo(long serviceId) {
        return instance != null && backendServiceId == serviceId;
    }

    boolean deleted() {
        return deleted;
    }

    void markDeleted() {
        deleted = true;
        instance = null;
    }

    InstanceSpec spec(SandboxStore store) {
        return new InstanceSpec(record.id(), store.dirOf(record.id()), record.memoryLimitMib(), record.vcpus(),
                record.image(), record.pidsLimit(), record.diskLimitMib());
    }

    SandboxStatus status() {
        if (record.status() == SandboxStatus.FAILED) {
            return SandboxStatus.FAILED;
        }
        return instance == null ? SandboxStatus.BACKEND_UNAVAILABLE : SandboxStatus.RUNNING;
    }

    SandboxInfo info() {
        SandboxRecord r = record;
        SandboxInstance i = instance;
        SandboxStatus status = status();
        String reason = switch (status) {
            case FAILED -> r.reason();
            case BACKEND_UNAVAILABLE -> "backend " + r.backend() + " is not registered right now";
            case RUNNING, STOPPED, PAUSED -> null;
        };
        return new SandboxInfo(r.id(), r.backend(), r.tenant(), status.wire(), r.createdAtUnix(),
                r.state() == null ? 0 : r.state().pid(), r.memoryLimitMib(), i == null ? null : i.workspace(), reason,
                r.vcpus(), r.image(), null);
    }
}
