package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.IntSupplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;

/**
 * Forking N children from a snapshot, all or nothing: everything the caller can be refused for
 * (bad n, removed fields, unknown or unrestorable tag, no room on the host) is checked before the
 * first child starts; if child k fails, the k−1 made are removed and the error names child k and
 * the cause. Each child is an ordinary sandbox, recorded before it is made, so after a crash
 * those finished are re-adopted and a half-made one is cleaned up like any interrupted create.
 */
final class Forks {
    private static final System.Logger LOG = System.getLogger(Forks.class.getName());
    private static final int RETRY_AFTER_SECS = 10;

    private final Snapshots snapshots;
    private final Sandboxes sandboxes;
    private final SandboxLifecycle lifecycle;
    private final StorageRegistry storage;
    private final IntSupplier maxSandboxes;

    Forks(Snapshots snapshots, Sandboxes sandboxes, SandboxLifecycle lifecycle, StorageRegistry storage,
            IntSupplier maxSandboxes) {
        this.snapshots = snapshots;
        this.sandboxes = sandboxes;
        this.lifecycle = lifecycle;
        this.storage = storage;
        this.maxSandboxes = maxSandboxes;
    }

    List<SandboxInfo> fork(Caller caller, ForkRequest request) {
        if (Boolean.TRUE.equals(request.liveFork()) || Boolean.TRUE.equals(request.hugepages())) {
            throw new ApiException(410, "live_fork and hugepages were removed: every child is restored from the "
                    + "snapshot's image; leave them out");
        }
        int n = request.n() == null ? 1 : request.n();
        if (n < 1 || n > SnapshotService.MAX_FORK) {
            throw ApiException.badRequest("n must be 1 to " + SnapshotService.MAX_FORK + ", got " + n);
        }
        String tag = SnapshotTags.check("snapshot_tag", request.snapshotTag());
        SnapshotRecord snapshot = snapshots.find(caller, tag);
        String warning = snapshots.warning(snapshot);
        if (warning != null) {
            throw ApiException.conflict("snapshot " + tag + " is not restorable: " + warning);
        }
        BackendRegistry.Entry e = lifecycle.chooseBackend(snapshot.backend());
        SandboxLifecycle.checkAvailable(e);
        Images images = Captures.imagesOf(e);
        int running = sandboxes.size();
        int max = maxSandboxes.getAsInt();
        if (running + n > max) {
            sandboxes.observer().sandboxCreated(CreateOutcome.REFUSED);
            throw ApiException.noCapacity("this host holds at most " + max + " sandboxes (max_sandboxes) and has "
                    + running + "; " + n + " more do not fit: delete some or fork fewer", RETRY_AFTER_SECS);
        }
        Path image = snapshots.store().imageOf(snapshot);
        CreateSandboxRequest child = new CreateSandboxRequest(e.name(), request.memoryLimitMib());
        List<SandboxInfo> made = new ArrayList<>(n);
        for (int k = 1; k <= n; k++) {
            try {
                made.add(lifecycle.createOn(caller, e, child, tag, (spec, context) -> images.fork(spec, image, storage,
                        context)));
                sandboxes.observer().sandboxCreated(CreateOutcome.OK);
            } catch (RuntimeException ex) {
                sandboxes.observer().sandboxCreated(SandboxLifecycle.outcomeOf(ex));
                removeAll(caller, made, ex);
                int status = ex instanceof ApiException a ? a.status() : 500;
                throw new ApiException(status, "child " + k + " of " + n + " from snapshot " + tag + " failed, so the "
                        + (k - 1) + " made before it were removed: " + Optional.ofNullable(ex.getMessage())
                                .orElse(ex.getClass().getSimpleName()),
                        ex instanceof ApiException a ? a.retryAfterSeconds() : null, ex);
            }
        }
        return made;
    }

    private void removeAll(Caller caller, List<SandboxInfo> made, RuntimeException cause) {
        for (SandboxInfo info : made) {
            try {
                lifecycle.delete(caller, info.id());
            } catch (RuntimeException e) {
                cause.addSuppressed(e);
                LOG.log(Level.WARNING, "cannot remove child " + info.id() + " of a failed fork: " + e.getMessage());
            }
        }
    }
}
