package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.testpoints.TestPoints;

/**
 * Making snapshots: a build (boot a fresh sandbox, set it up, wait, capture, remove it), a branch
 * of a running sandbox (it keeps running) and a compaction (a flat copy under a new tag). Each
 * reserves its tag with a record {@code writing}, stages the image and renames it into place, then
 * marks the record {@code ready}; a failure removes the record and the files, so a tag is either
 * ready or free (or, after a crash, {@code failed}).
 */
final class Captures {
    private static final System.Logger LOG = System.getLogger(Captures.class.getName());
    private static final int MAX_BOOT_WAIT_SECS = 600;
    private static final Duration BUILD_DEADLINE = Duration.ofMinutes(15);
    /** A build's steps: the builder started, its setup run, its boot wait over, its capture. */
    static final int BUILD_STEPS = 4;

    private final Snapshots snapshots;
    private final Sandboxes sandboxes;
    private final SandboxLifecycle lifecycle;
    private final LiveInstances live;
    private final GuestAccess guest;
    private final StorageRegistry storage;
    private final BooleanSupplier stopping;
    private volatile Duration branchTimeout;

    /** @param branchTimeout how long a branch may take before it is a 504 (the seed's 180 s unless configured) */
    Captures(Snapshots snapshots, Sandboxes sandboxes, SandboxLifecycle lifecycle, LiveInstances live, GuestAccess guest,
            StorageRegistry storage, BooleanSupplier stopping, Duration branchTimeout) {
        this.branchTimeout = branchTimeout;
        this.snapshots = snapshots;
        this.sandboxes = sandboxes;
        this.lifecycle = lifecycle;
        this.live = live;
        this.guest = guest;
        this.storage = storage;
        this.stopping = stopping;
    }

    /** How long a branch may take from now on (a configuration change). */
    void branchTimeout(Duration timeout) {
        branchTimeout = timeout;
    }

    /**
     * Builds a snapshot, telling {@code progress} each of its {@value #BUILD_STEPS} steps as it is done:
     * the first once its builder runs, so that what the caller can fix (the tag, the limits, the
     * network) is refused before any step.
     */
    SnapshotInfo build(Caller caller, SnapshotRequest request, Progress progress) {
        if (request == null) {
            throw ApiException.badRequest("a body is required: {\"tag\": \"py-base\", \"boot_wait_secs\": 0}");
        }
        String tag = SnapshotTags.check("tag", request.tag());
        int bootWait = request.bootWaitSecs() == null ? 0 : request.bootWaitSecs();
        if (bootWait < 0 || bootWait > MAX_BOOT_WAIT_SECS) {
            throw ApiException.badRequest("boot_wait_secs must be 0 to " + MAX_BOOT_WAIT_SECS + ", got " + bootWait);
        }
        if (request.setup() != null && request.setup().isEmpty()) {
            throw ApiException.badRequest("setup must name a command, e.g. [\"sh\", \"-c\", \"echo ready > /work/x\"], "
                    + "or be left out");
        }
        lifecycle.checkNamed(caller, request.backend());
        BackendRegistry.Entry e = lifecycle.chooseBackend(request.backend());
        CreateSandboxRequest create = new CreateSandboxRequest(e.name(), request.memoryLimitMib(), null, null, null,
                request.diskLimitMib(), null, request.network());
        return build(caller, tag, create, null, request.setup(), bootWait, e, progress);
    }

    /**
     * Builds the snapshot {@code tag} of a sandbox of a template ({@code create}, already the
     * template's, on its {@code root}) after {@code setup} ran in it: a template's setup snapshot
     * ({@link TemplateSetups}), whose children are the template's sandboxes.
     */
    SnapshotInfo buildOnTemplate(Caller caller, String tag, CreateSandboxRequest create, TemplateRoot root,
            List<String> setup) {
        return build(caller, tag, create, root, setup, 0, lifecycle.chooseBackend(create.backend()), Progress.NONE);
    }

    private SnapshotInfo build(Caller caller, String tag, CreateSandboxRequest create, TemplateRoot root, List<String> setup,
            int bootWait, BackendRegistry.Entry e, Progress progress) {
        lifecycle.checkAvailable(e);
        Images images = imagesOf(e);
        try (Capacity.Reservation place = lifecycle.reserve(1)) {
            return build(caller, tag, create, root, setup, bootWait, e, images, place, progress);
        }
    }

    private SnapshotInfo build(Caller caller, String tag, CreateSandboxRequest create, TemplateRoot root, List<String> setup,
            int bootWait, BackendRegistry.Entry e, Images images, Capacity.Reservation place, Progress progress) {
        SnapshotRecord reserved = SnapshotRecord.writing(caller.tenant(), tag, e.name(), Snapshots.now(), null, null, null,
                create.template(), root);
        snapshots.reserve(reserved, ApiException.badRequest("snapshot " + tag + " already exists; delete it "
                + "(DELETE /v1/snapshots/" + tag + ") or choose another tag"));
        Instant deadline = Instant.now().plus(BUILD_DEADLINE).plusSeconds(bootWait);
        String builder = null;
        try {
            CreateRequests.check(create, e.name(), e.capabilities());
            SandboxInfo made = lifecycle.createOn(caller, e, create, null, place, lifecycle.fresh(e), false, root);
            builder = made.id();
            progress.step("builder sandbox started", 1, BUILD_STEPS);
            SnapshotRecord withBuilder = reserved.withBuilder(builder, made.network());
            snapshots.update(reserved, withBuilder);
            reserved = withBuilder;
            if (setup != null) {
                ExecResult ran = guest.exec(caller, builder, new ExecRequest(setup, null, null, null, null, null));
                if (ran.exitCode() != 0 || ran.timedOut()) {
                    throw ApiException.badRequest("setup " + setup + " failed with exit code " + ran.exitCode()
                            + (ran.timedOut() ? " (timed out)" : "") + ": " + tail(ran.stderr()));
                }
            }
            progress.step("setup ran", 2, BUILD_STEPS);
            waitFor(bootWait);
            progress.step("boot wait over", 3, BUILD_STEPS);
            Sandbox sb = sandboxes.find(caller, builder);
            SnapshotInfo built = capture("build", sb, images, reserved, new CoreOperation("building snapshot " + tag, deadline,
                    stopping));
            progress.step("captured", BUILD_STEPS, BUILD_STEPS);
            return built;
        } catch (RuntimeException ex) {
            discard(reserved, ex);
            throw ex;
        } finally {
            if (builder != null) {
                removeBuilder(caller, builder);
            }
        }
    }

    SnapshotInfo branch(Caller caller, String id, BranchRequest request) {
        if (request == null) {
            throw ApiException.badRequest("a body is required: {\"tag\": \"checkpoint-1\"}");
        }
        refuseRemoved(request);
        String tag = SnapshotTags.check("tag", request.tag());
        Sandbox sb = sandboxes.find(caller, id);
        if (!sb.record().mounts().isEmpty()) {
            throw ApiException.conflict("sandbox " + id + " mounts volume(s), which a snapshot cannot carry (its "
                    + "children could not share them); branch a sandbox without volumes");
        }
        if (sb.instance() != null && sb.instance().status() == SandboxStatus.PAUSED) {
            throw ApiException.conflict("sandbox " + id + " is " + SandboxInfo.WARM + " (paused); touch it first (POST "
                    + "/v1/sandboxes/" + id + "/touch), then branch it");
        }
        BackendRegistry.Entry e = lifecycle.chooseBackend(sb.record().backend());
        Images images = imagesOf(e);
        String parent = Optional.ofNullable(sb.record().snapshotTag())
                .filter(t -> snapshots.lookup(caller.tenant(), t).isPresent()).orElse(null);
        SnapshotRecord reserved = SnapshotRecord.writing(caller.tenant(), tag, e.name(), Snapshots.now(), id, parent,
                sb.record().network(), sb.record().template(), sb.record().root());
        snapshots.reserve(reserved, ApiException.conflict("snapshot " + tag + " already exists; choose another tag"));
        try {
            TestPoints.reach("branch.reserved");
            return capture("branch", sb, images, reserved, new CoreOperation("branching sandbox " + id + " as " + tag,
                    Instant.now().plus(branchTimeout), stopping));
        } catch (RuntimeException ex) {
            discard(reserved, ex);
            throw ex;
        }
    }

    private static void refuseRemoved(BranchRequest r) {
        if (r.mode() != null || Boolean.TRUE.equals(r.live()) || Boolean.TRUE.equals(r.diff())
                || Boolean.TRUE.equals(r.measureDiff())) {
            throw new ApiException(410, "mode, live, diff and measure_diff were removed: a branch is always a full "
                    + "capture of the sandbox; send only {\"tag\": ...}");
        }
    }

    /** Writes a flat copy of {@code tag}'s image under {@code request.to()}, staged and renamed. */
    SnapshotInfo compact(Caller caller, String tag, CompactRequest request) {
        SnapshotTags.check("tag", tag);
        if (request == null) {
            throw ApiException.badRequest("a body is required: {\"to\": \"" + tag + "-flat\"}");
        }
        String to = SnapshotTags.check("to", request.to());
        if (to.equals(tag)) {
            throw ApiException.badRequest("to must differ from the snapshot compacted (" + tag + ")");
        }
        SnapshotRecord source = snapshots.find(caller, tag);
        String warning = snapshots.warning(source);
        if (warning != null) {
            throw ApiException.conflict("snapshot " + tag + " cannot be compacted: " + warning);
        }
        SnapshotRecord reserved = SnapshotRecord.writing(caller.tenant(), to, source.backend(), Snapshots.now(), null,
                null, source.network());
        snapshots.reserve(reserved, ApiException.conflict("snapshot " + to + " already exists; choose another `to`"));
        try {
            TestPoints.reach("compact.reserved");
            OperationContext context = new CoreOperation("compacting snapshot " + tag + " to " + to,
                    Instant.now().plus(BUILD_DEADLINE), stopping);
            List<SnapshotRecord.Artifact> made = flatten(source, snapshots.images().staging(reserved), context);
            TestPoints.reach("compact.staged");
            snapshots.images().publish(reserved);
            TestPoints.reach("compact.published");
            SnapshotRecord ready = reserved.ready(source.captures(), null, made);
            snapshots.update(reserved, ready);
            return snapshots.info(ready);
        } catch (IOException ex) {
            ApiException failure = ApiException.internal("cannot compact snapshot " + tag + ": " + ex.getMessage(), ex);
            discard(reserved, failure);
            throw failure;
        } catch (RuntimeException ex) {
            discard(reserved, ex);
            throw ex;
        }
    }

    /**
     * Writes a standalone copy of {@code source}'s image into the empty directory {@code to} through
     * its backend's {@link Images#compact}: every artifact at depth 0, naming no other image.
     *
     * @return the artifacts written, relative to {@code to}
     */
    List<SnapshotRecord.Artifact> flatten(SnapshotRecord source, Path to, OperationContext context) throws IOException {
        Images images = imagesOf(lifecycle.chooseBackend(source.backend()));
        Path from = snapshots.images().imageOf(source);
        List<StoredArtifact> recorded = source.artifacts().stream()
                .map(a -> new StoredArtifact(ArtifactKind.valueOf(a.kind()), from.resolve(a.file()), a.mode(), 0, null,
                        null, 0))
                .toList();
        return recordedIn(to, images.compact(from, to, recorded, storage, context));
    }

    /** What exports a flat copy for a move to another node runs under: this long at most, cut when the daemon stops. */
    OperationContext exporting(String tag) {
        return new CoreOperation("exporting snapshot " + tag + " for another node", Instant.now().plus(BUILD_DEADLINE), stopping);
    }

    /**
     * Captures {@code sb} into the reserved record's staging directory, renames it into place, marks it
     * ready; {@code op} names the {@link TestPoints} on the way.
     */
    private SnapshotInfo capture(String op, Sandbox sb, Images images, SnapshotRecord reserved, OperationContext context) {
        CapturedImage captured = sb.gate.exclusive("branch", live.patience(), () -> {
            SandboxInstance instance = live.of(sb);
            try {
                return images.capture(instance, snapshots.images().staging(reserved), storage, context);
            } catch (IOException e) {
                throw ApiException.internal("cannot stage snapshot " + reserved.tag() + ": " + e.getMessage(), e);
            }
        });
        TestPoints.reach(op + ".staged");
        context.checkpoint("registering snapshot " + reserved.tag());
        try {
            snapshots.images().publish(reserved);
        } catch (IOException e) {
            throw ApiException.internal("cannot move snapshot " + reserved.tag() + " into place: " + e.getMessage(), e);
        }
        TestPoints.reach(op + ".published");
        Path image = snapshots.images().imageOf(reserved);
        Path staged = image.resolveSibling(SnapshotImages.STAGING);
        List<SnapshotRecord.Artifact> artifacts = recordedIn(staged, captured);
        SnapshotRecord ready = reserved.ready(captured.captures(), reserved.branchedFrom() == null ? null
                : captured.pauseMillis(), artifacts);
        snapshots.update(reserved, ready);
        return snapshots.info(ready);
    }

    /** The image's artifacts as the record keeps them: relative to the (staging) directory they were written in. */
    private static List<SnapshotRecord.Artifact> recordedIn(Path staged, CapturedImage image) {
        return image.artifacts().stream()
                .map(a -> new SnapshotRecord.Artifact(a.kind().name(), staged.relativize(a.path()).toString(), a.mode(),
                        a.bytesWritten()))
                .toList();
    }

    private void discard(SnapshotRecord reserved, RuntimeException cause) {
        LOG.log(Level.INFO, "snapshot " + reserved.tag() + " not taken: " + cause.getMessage());
        snapshots.discard(reserved);
    }

    private void removeBuilder(Caller caller, String id) {
        try {
            lifecycle.delete(caller, id);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "cannot remove the builder sandbox " + id + " (delete it yourself): " + e.getMessage());
        }
    }

    static Images imagesOf(BackendRegistry.Entry e) {
        return e.require(Images.class, "snapshot or fork its sandboxes");
    }

    private void waitFor(int seconds) {
        long until = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < until) {
            if (stopping.getAsBoolean()) {
                throw ApiException.unavailable("the daemon is stopping; build the snapshot again", 5);
            }
            try {
                Thread.sleep(Math.min(200, Math.max(1, (until - System.nanoTime()) / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApiException(503, "interrupted while waiting boot_wait_secs", 1, e);
            }
        }
    }

    private static String tail(String s) {
        return s == null ? "" : s.length() > 2000 ? "..." + s.substring(s.length() - 2000) : s;
    }
}
