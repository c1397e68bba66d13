package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.vivarium.api.BranchRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.VmService;

/**
 * Core's three components started together over one state directory, as Declarative Services
 * wires them (the VM and snapshot components after the sandbox manager), behind one object so that
 * a test reaches every service through it.
 */
class WholeCore extends SandboxManager implements VmService, SnapshotService {
    private final VmManager vms = new VmManager();
    private final SnapshotManager snaps = new SnapshotManager();

    @Override
    void start(Path stateDir, String defaultBackendName, Duration patience) throws IOException {
        super.start(stateDir, defaultBackendName, patience);
        vms.start(core());
        snaps.start(core(), Duration.ofSeconds(SnapshotService.BRANCH_TIMEOUT_SECS));
    }

    /** The copies of snapshot images this core makes and serves. */
    io.vivarium.api.spi.SnapshotCopies copies() {
        return snaps;
    }

    @Override
    public SandboxInfo createVm(Caller caller, CreateSandboxRequest request) {
        return vms.createVm(caller, request);
    }

    @Override
    public List<SandboxInfo> listVms(Caller caller) {
        return vms.listVms(caller);
    }

    @Override
    public SandboxInfo getVm(Caller caller, String id) {
        return vms.getVm(caller, id);
    }

    @Override
    public void deleteVm(Caller caller, String id) {
        vms.deleteVm(caller, id);
    }

    @Override
    public void deleteVm(Caller caller, String id, boolean force) {
        vms.deleteVm(caller, id, force);
    }

    @Override
    public SandboxInfo stopVm(Caller caller, String id) {
        return vms.stopVm(caller, id);
    }

    @Override
    public SandboxInfo startVm(Caller caller, String id) {
        return vms.startVm(caller, id);
    }

    @Override
    public CheckpointInfo checkpointVm(Caller caller, String id, CheckpointRequest request) {
        return vms.checkpointVm(caller, id, request);
    }

    @Override
    public List<CheckpointInfo> listVmCheckpoints(Caller caller, String id) {
        return vms.listVmCheckpoints(caller, id);
    }

    @Override
    public void deleteVmCheckpoint(Caller caller, String id, String tag) {
        vms.deleteVmCheckpoint(caller, id, tag);
    }

    @Override
    public SandboxInfo restoreVm(Caller caller, String id, CheckpointRequest request) {
        return vms.restoreVm(caller, id, request);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request) {
        return snaps.build(caller, request);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request, Progress progress) {
        return snaps.build(caller, request, progress);
    }

    @Override
    public List<SnapshotInfo> snapshots(Caller caller) {
        return snaps.snapshots(caller);
    }

    @Override
    public SnapshotInfoDetail info(Caller caller, String tag) {
        return snaps.info(caller, tag);
    }

    @Override
    public void deleteSnapshot(Caller caller, String tag, boolean cascade, boolean force) {
        snaps.deleteSnapshot(caller, tag, cascade, force);
    }

    @Override
    public SnapshotInfo compact(Caller caller, String tag, CompactRequest request) {
        return snaps.compact(caller, tag, request);
    }

    @Override
    public List<SandboxInfo> fork(Caller caller, ForkRequest request) {
        return snaps.fork(caller, request);
    }

    @Override
    public List<SandboxInfo> fork(Caller caller, ForkRequest request, Progress progress) {
        return snaps.fork(caller, request, progress);
    }

    @Override
    public SnapshotInfo branch(Caller caller, String id, BranchRequest request) {
        return snaps.branch(caller, id, request);
    }

    @Override
    public void touch(Caller caller, String id) {
        snaps.touch(caller, id);
    }
}
