package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Copies of one workspace template made ahead of time, so that a create renames a copy into the
 * sandbox's directory instead of waiting for {@code cp}. Bounded: at most {@code size} copies
 * exist or are being made at once, by one background thread that runs only while there is a copy
 * to make (the first take starts it, so a daemon that never creates makes none). A take that
 * finds the pool empty returns nothing and the caller copies as it would without a pool.
 *
 * <p>The copies live in a directory of their own named after the daemon's process (pid and start
 * time) and a random part: {@link #close} deletes it, and a pool that opens deletes those of
 * daemons no longer running (killed with -9), so no copy outlives its daemon past the next start.
 * A copy moved into a sandbox belongs to the sandbox and is deleted with its directory. The rename
 * needs the pool and the sandboxes on one filesystem; where they are not, the pool turns itself
 * off at the first take and says why.
 */
final class WorkspacePool implements AutoCloseable {

    /** Makes {@code target}, a new file, a copy of {@code template}. */
    @FunctionalInterface
    interface Copier {
        void copy(Path template, Path target) throws IOException;
    }

    private static final System.Logger LOG = System.getLogger(WorkspacePool.class.getName());
    private static final long CLOSE_WAIT_MILLIS = 2000;

    private final Path dir;
    private final int size;
    private final Copier copier;
    private final ThreadPoolExecutor filler;
    /** Guarded by this: the template the copies are of, the finished copies, and the copies being made. */
    private Path template;
    private final Deque<Path> ready = new ArrayDeque<>();
    private int making;
    private String offReason;
    private boolean closed;

    private WorkspacePool(Path dir, int size, Copier copier) {
        this.dir = dir;
        this.size = size;
        this.copier = copier;
        this.filler = PoolFiller.named("procbox-workspace-pool");
    }

    /**
     * A pool of at most {@code size} copies in a new directory under {@code parent} (made with the
     * first copy), after removing the pools there whose daemons are gone; a pool that makes nothing
     * when {@code size} is 0.
     */
    static WorkspacePool open(Path parent, int size, Copier copier) throws IOException {
        if (size < 0) {
            throw new IllegalArgumentException("pool size must not be negative: " + size);
        }
        removeAbandoned(parent);
        return new WorkspacePool(parent.resolve(DaemonOwnedDirs.newName()), size, copier);
    }

    /** Deletes the pools under {@code parent} of processes that no longer run. */
    static void removeAbandoned(Path parent) throws IOException {
        for (Path pool : DaemonOwnedDirs.abandoned(parent)) {
            deleteFlat(pool);
        }
    }

    Path dir() {
        return dir;
    }

    /**
     * Moves a ready copy of {@code template} to {@code target} (which must not exist) and starts
     * making a copy in its place. Empty if none was ready (then one is being made for the next
     * take): the caller copies the template itself.
     */
    Optional<Path> take(Path template, Path target) {
        Path copy;
        synchronized (this) {
            if (closed || offReason != null || size == 0) {
                return Optional.empty();
            }
            if (!template.equals(this.template)) {
                // the default size or owner changed: the copies of the old template are no use
                discardReady();
                this.template = template;
            }
            copy = ready.poll();
            refill();
        }
        if (copy == null) {
            return Optional.empty();
        }
        try {
            Files.move(copy, target, StandardCopyOption.ATOMIC_MOVE);
            return Optional.of(target);
        } catch (AtomicMoveNotSupportedException e) {
            turnOff(dir + " is not on the filesystem of the sandboxes (" + target.getParent() + ")");
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot move a pooled workspace image to " + target + ": " + e.getMessage());
        }
        deleteQuietly(copy);
        return Optional.empty();
    }

    /** Copies ready to be taken now. */
    synchronized int ready() {
        return ready.size();
    }

    /** Null while the pool serves; else why it stopped. */
    synchronized String offReason() {
        return offReason;
    }

    private void turnOff(String why) {
        LOG.log(Level.WARNING, "workspace image pool off: " + why + "; every create copies its image");
        synchronized (this) {
            offReason = why;
            discardReady();
        }
    }

    /** Schedules copies until the ready ones and those being made reach the bound. */
    private void refill() {
        while (ready.size() + making < size) {
            making++;
            filler.execute(this::makeOne);
        }
    }

    private void makeOne() {
        Path of;
        synchronized (this) {
            if (closed || offReason != null) {
                making--;
                return;
            }
            of = template;
        }
        Path copy = dir.resolve("image-" + UUID.randomUUID() + ".ext4");
        boolean made = false;
        try {
            Files.createDirectories(dir);
            copier.copy(of, copy);
            made = true;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot copy " + of + " into the workspace image pool: " + e.getMessage());
        }
        synchronized (this) {
            making--;
            if (made && !closed && offReason == null && of.equals(template)) {
                ready.add(copy);
                return;
            }
        }
        deleteQuietly(copy);
    }

    private void discardReady() {
        ready.forEach(WorkspacePool::deleteQuietly);
        ready.clear();
    }

    /** Stops making copies and deletes the pool's directory with the copies still in it. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            ready.clear();
        }
        filler.shutdownNow();
        try {
            if (!filler.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                LOG.log(Level.WARNING, "the workspace image pool's copy did not stop within " + CLOSE_WAIT_MILLIS + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            deleteFlat(dir);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot delete the workspace image pool " + dir + ": " + e.getMessage());
        }
    }

    /** Deletes a pool directory, which holds only files. */
    private static void deleteFlat(Path pool) throws IOException {
        if (!Files.isDirectory(pool)) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(pool)) {
            for (Path file : files) {
                Files.deleteIfExists(file);
            }
        }
        Files.deleteIfExists(pool);
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot delete " + file + ": " + e.getMessage());
        }
    }
}
