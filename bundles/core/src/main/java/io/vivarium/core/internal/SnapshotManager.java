package io.vivarium.core.internal;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;

import io.vivarium.api.BranchRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.spi.HeldImage;
import io.vivarium.api.spi.SnapshotCopies;
import io.vivarium.api.spi.SnapshotManifest;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.component.annotations.Reference;

/**
 * The {@link SnapshotService} (and the {@link SnapshotCopies} of its images) as a component: the snapshot registry ({@link Snapshots}), builds,
 * branches and compactions ({@link Captures}) and forks ({@link Forks}) over the {@link Core} of the
 * {@link SandboxManager}, with its storage strategies (dynamic: they come and go with their bundles).
 * It activates after the sandbox manager has loaded and started adopting its sandboxes, as it did
 * when both were one component; immediate, so that it recovers interrupted snapshots at start-up.
 */
@Component(service = {SnapshotService.class, SnapshotCopies.class}, immediate = true, configurationPid = SandboxManager.PID)
public class SnapshotManager implements SnapshotService, SnapshotCopies {
    @Reference
    private SandboxManager manager;
    private Core core;
    private Snapshots snapshots;
    private Captures captures;
    private Forks forks;
    private ImageCopies copies;
    private volatile boolean stopping;

    /** Reads {@code branch_timeout_secs} of core's one configuration ({@link SandboxManager.Config}). */
    @Activate
    void activate(SandboxManager.Config config) throws IOException {
        start(manager.core(), Duration.ofSeconds(Math.max(1, config.branch__timeout__secs())));
    }

    /** A configuration change updates the branch timeout in place (see {@link SandboxManager#modified}). */
    @Modified
    void modified(SandboxManager.Config config) {
        captures.branchTimeout(Duration.ofSeconds(Math.max(1, config.branch__timeout__secs())));
    }

    void start(Core core, Duration branchTimeout) throws IOException {
        this.core = core;
        snapshots = new Snapshots(core.registry());
        captures = new Captures(snapshots, core.sandboxes(), core.lifecycle(), core.live(), core.guest(), core.storage(),
                () -> stopping || core.stopping().getAsBoolean(), branchTimeout);
        forks = new Forks(snapshots, core.sandboxes(), core.lifecycle(), core.storage());
        copies = new ImageCopies(snapshots, new ImageExports(snapshots, captures));
        List<SnapshotRecord> interrupted = snapshots.open(core.sandboxes().state(), core.stateDir());
        SnapshotBuilders.removeLeftOvers(interrupted, core.lifecycle());
        core.templates().setups(new SetupSnapshots(snapshots, captures, forks));
    }

    @Deactivate
    void deactivate() {
        stopping = true;
        core.templates().setups(null);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request) {
        return build(caller, request, Progress.NONE);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request, Progress progress) {
        return captures.build(caller, request, progress);
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
        return fork(caller, request, Progress.NONE);
    }

    @Override
    public List<SandboxInfo> fork(Caller caller, ForkRequest request, Progress progress) {
        NodeChoice.refuse(request == null ? null : request.nodeId());
        return forks.fork(caller, request, progress);
    }

    @Override
    public SnapshotInfo branch(Caller caller, String id, BranchRequest request) {
        return captures.branch(caller, id, request);
    }

    @Override
    public void touch(Caller caller, String id) {
        core.pausing().touch(caller, id);
    }

    @Override
    public SnapshotManifest manifest(String tenant, String tag) {
        return copies.manifest(tenant, tag);
    }

    @Override
    public List<HeldImage> held() {
        return copies.held();
    }

    @Override
    public InputStream open(String tenant, String tag, String path) throws IOException {
        return copies.open(tenant, tag, path);
    }

    @Override
    public void receive(String tenant, SnapshotManifest manifest, Source source) {
        copies.receive(tenant, manifest, source);
    }
}
