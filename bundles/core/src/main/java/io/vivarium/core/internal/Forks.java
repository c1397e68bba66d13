package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;
import io.vivarium.common.testpoints.TestPoints;

/**
 * Forking N children from a snapshot, all or nothing: everything the caller can be refused for
 * (bad n, removed fields, unknown or unrestorable tag, no room on the host) is checked before the
 * first child starts. Up to {@value #PARALLEL_CHILDREN} children are made at once; once child k
 * fails no further one starts, those made are removed and the error names child k and the cause.
 * Each child is an ordinary sandbox, recorded before it is made, so after a crash those finished
 * are re-adopted and a half-made one is cleaned up like any interrupted create.
 */
final class Forks {
    private static final System.Logger LOG = System.getLogger(Forks.class.getName());
    /**
     * Children made at once. A child's create waits more than it computes (its fsyncs, the
     * process starts, the agent's start), so many side by side keep both cores of the reference
     * machine busy: 100 children took 4270 and 6222 ms with 16 at once against 7680 and 12179 ms
     * with 4 (docs/benchmarks.md, ForkBenchmark), and less CPU per child.
     */
    static final int PARALLEL_CHILDREN = 16;
    /** What a fork's steps are. */
    static final String CHILDREN = "children";

    private final Snapshots snapshots;
    private final Sandboxes sandboxes;
    private final SandboxLifecycle lifecycle;
    private final StorageRegistry storage;

    Forks(Snapshots snapshots, Sandboxes sandboxes, SandboxLifecycle lifecycle, StorageRegistry storage) {
        this.snapshots = snapshots;
        this.sandboxes = sandboxes;
        this.lifecycle = lifecycle;
        this.storage = storage;
    }

    /** Forks the request's children, telling {@code progress} how many are made once the fork is under way. */
    List<SandboxInfo> fork(Caller caller, ForkRequest request, Progress progress) {
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
        lifecycle.checkAvailable(e);
        Images images = Captures.imagesOf(e);
        Capacity.Reservation places;
        try {
            places = lifecycle.reserve(n);
        } catch (ApiException full) {
            sandboxes.observer().sandboxCreated(CreateOutcome.REFUSED);
            throw full;
        }
        try (places) {
            progress.step(CHILDREN, 0, n);
            return forkAll(caller, e, images, snapshot, n, places, new CreateSandboxRequest(e.name(), request.memoryLimitMib(),
                    null, null, null, null, null, snapshot.network(), null, null, snapshot.template()), tag, progress);
        }
    }

    /**
     * One sandbox of a template with a setup: a child of the template's setup snapshot (another
     * tenant's, {@link TemplateSetups}), made as {@code child} says, recorded as the template's
     * sandbox, not as a snapshot's child (the caller has no such snapshot).
     */
    SandboxInfo forkOfTemplate(Caller caller, SnapshotRecord snapshot, CreateSandboxRequest child) {
        String warning = snapshots.warning(snapshot);
        if (warning != null) {
            throw ApiException.conflict("the setup snapshot of template " + snapshot.template() + " is not restorable: "
                    + warning + "; the operator makes the template again (DELETE, then POST /v1/templates)");
        }
        BackendRegistry.Entry e = lifecycle.chooseBackend(snapshot.backend());
        lifecycle.checkAvailable(e);
        Images images = Captures.imagesOf(e);
        try (Capacity.Reservation place = lifecycle.reserve(1)) {
            return forkAll(caller, e, images, snapshot, 1, place, child, null, Progress.NONE).get(0);
        }
    }

    /** @param recordedTag the tag the children's records name as where they came from (null: none) */
    private List<SandboxInfo> forkAll(Caller caller, BackendRegistry.Entry e, Images images, SnapshotRecord snapshot,
            int n, Capacity.Reservation places, CreateSandboxRequest child, String recordedTag, Progress progress) {
        String tag = snapshot.tag();
        Path image = snapshots.images().imageOf(snapshot);
        SandboxInfo[] made = new SandboxInfo[n];
        AtomicInteger next = new AtomicInteger(1);
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Failure> failed = new AtomicReference<>();
        Runnable worker = () -> {
            for (int k = next.getAndIncrement(); k <= n && failed.get() == null; k = next.getAndIncrement()) {
                TestPoints.reach("fork.child");
                try {
                    made[k - 1] = lifecycle.createOn(caller, e, child, recordedTag, places,
                            (spec, context) -> images.fork(spec, image, storage, context), true, snapshot.root());
                    sandboxes.observer().sandboxCreated(CreateOutcome.OK);
                    synchronized (done) { // told in order: a count never goes back
                        progress.step(CHILDREN, done.incrementAndGet(), n);
                    }
                } catch (RuntimeException ex) {
                    sandboxes.observer().sandboxCreated(SandboxLifecycle.outcomeOf(ex));
                    failed.compareAndSet(null, new Failure(k, ex));
                }
            }
        };
        runInParallel(worker, Math.min(n, PARALLEL_CHILDREN));
        Failure failure = failed.get();
        if (failure == null) {
            return List.of(made);
        }
        List<SandboxInfo> toRemove = Arrays.stream(made).filter(Objects::nonNull).toList();
        RuntimeException ex = failure.cause();
        removeAll(caller, toRemove, ex);
        int status = ex instanceof ApiException a ? a.status() : 500;
        throw new ApiException(status, "child " + failure.child() + " of " + n + " from snapshot " + tag
                + " failed, so the " + toRemove.size() + " made were removed: "
                + Optional.ofNullable(ex.getMessage()).orElse(ex.getClass().getSimpleName()),
                ex instanceof ApiException a ? a.retryAfterSeconds() : null, ex);
    }

    private record Failure(int child, RuntimeException cause) {
    }

    /** Runs {@code worker} on {@code threads} threads (this one among them) and waits for all. */
    private static void runInParallel(Runnable worker, int threads) {
        List<Thread> helpers = new ArrayList<>();
        for (int i = 1; i < threads; i++) {
            Thread t = Thread.ofPlatform().name("vivarium-fork-" + i).daemon().start(worker);
            helpers.add(t);
        }
        worker.run();
        boolean interrupted = false;
        for (Thread t : helpers) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException ie) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
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
