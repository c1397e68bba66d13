package io.vivarium.api;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The snapshot registry, provided by core for {@code /v1/snapshots} and the fork and branch forms
 * of {@code /v1/sandboxes}: images children are forked from, shared across sandboxes, never the
 * instance-local checkpoints of {@link VmService}. Tags belong to a tenant (another tenant's tag is
 * not found). Every method throws {@link ApiException} for what the caller can fix or retry.
 * Since 1.3.
 */
@ProviderType
public interface SnapshotService {

    /** A tag: a plain name, never a path. */
    String TAG = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";

    /** The most children one fork makes. */
    int MAX_FORK = 1000;

    /** Longest a branch may take before it is a 504. */
    int BRANCH_TIMEOUT_SECS = 180;

    /** Boots a fresh sandbox, captures it under the request's tag and removes it; 400 bad input, 409 tag taken. */
    SnapshotInfo build(Caller caller, SnapshotRequest request);

    /**
     * {@link #build(Caller, SnapshotRequest)}, telling {@code progress} each step as it is done;
     * what the caller can fix is thrown before the first step. Since 2.9; by default no step is told.
     */
    default SnapshotInfo build(Caller caller, SnapshotRequest request, Progress progress) {
        return build(caller, request);
    }

    List<SnapshotInfo> snapshots(Caller caller);

    /** 404 unknown tag. */
    SnapshotInfoDetail info(Caller caller, String tag);

    /**
     * Deletes a snapshot. 409 naming every dependent unless {@code cascade} (the whole subtree) or
     * {@code force} (dependents orphaned); both is a 400. Children already forked keep running.
     */
    void deleteSnapshot(Caller caller, String tag, boolean cascade, boolean force);

    /** Writes a flat copy of {@code tag} under {@code request.to()}; 409 if it exists, 400 if it is {@code tag}. */
    SnapshotInfo compact(Caller caller, String tag, CompactRequest request);

    /**
     * Forks {@code n} children, all or none: 404 unknown tag, 409 not restorable (naming what is
     * missing), 410 removed fields, 503 with Retry-After when the host cannot hold them.
     */
    List<SandboxInfo> fork(Caller caller, ForkRequest request);

    /**
     * {@link #fork(Caller, ForkRequest)}, telling {@code progress} how many children are made as
     * they are; what the caller can fix (and no room) is thrown before the first step. Since 2.9;
     * by default no step is told.
     */
    default List<SandboxInfo> fork(Caller caller, ForkRequest request, Progress progress) {
        return fork(caller, request);
    }

    /** Captures a running sandbox under a new tag; the sandbox keeps running. */
    SnapshotInfo branch(Caller caller, String id, BranchRequest request);

    /** Resets the sandbox's idle clock; 404 unknown sandbox. */
    void touch(Caller caller, String id);
}
