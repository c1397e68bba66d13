package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Sandboxes of the default spec launched ahead of time (workspace mounted, agent answering,
 * cgroups made), so that a create takes one instead of waiting for the launch. Bounded: at most
 * {@code size} exist or are being launched at once, by one background thread that runs only while
 * there is one to launch (the first take starts it, so a daemon that never creates launches none).
 * A take that finds none ready returns nothing and the caller launches as it would without a pool.
 *
 * <p>Each pooled sandbox has a directory of its own, named after it, in the pool's directory,
 * itself named after the daemon's process ({@link DaemonOwnedDirs}). A take gives the sandbox the
 * caller's id ({@link Factory#assign}) and renames its directory to the caller's target, which
 * moves the mounts inside it along. {@link #close} discards what is pooled; a pool that starts
 * discards the pools of daemons no longer running (killed with -9), so no pooled sandbox outlives
 * its daemon past the next daemon's start. The rename needs the pool and the sandboxes on one
 * filesystem; where they are not, the pool turns itself off at the first take and says why.
 *
 * @param <T> a launched sandbox, as the factory hands it over
 */
final class SandboxPool<T> implements AutoCloseable {

    /** What the pool makes, hands over and ends. */
    interface Factory<T> {
        /** Launches a sandbox of the default spec named {@code name} in {@code dir}, an empty directory; throws if it cannot. */
        T launch(String name, Path dir);

        boolean alive(T sandbox);

        /** Gives a taken sandbox the caller's id, before its directory moves to the caller. */
        void assign(T sandbox, String id) throws IOException;

        /**
         * Ends the sandbox named {@code name} in {@code dir} and unmounts what is mounted in {@code dir},
         * from what the directory holds: also for a launch cut short and for a pool of a dead daemon,
         * where {@code sandbox} is null. Never throws.
         */
        void discard(String name, Path dir, T sandbox);

        /** Removes a directory that {@link #discard} emptied of mounts. */
        void delete(Path dir) throws IOException;
    }

    private static final System.Logger LOG = System.getLogger(SandboxPool.class.getName());
    private static final String SANDBOX_PREFIX = "pooled-";
    private static final long CLOSE_WAIT_MILLIS = 10_000;

    private record Entry<T>(String name, Path dir, T sandbox) {
    }

    private final int size;
    private final Factory<T> factory;
    private final String poolName;
    private final ThreadPoolExecutor filler;
    /** Guarded by this. */
    private Path dir;
    private final Deque<Entry<T>> ready = new ArrayDeque<>();
    private int making;
    private String offReason;
    private boolean closed;

    /** A pool of at most {@code size} sandboxes (none when 0), started by the first {@link #take}. */
    SandboxPool(int size, Factory<T> factory) throws IOException {
        this(size, factory, DaemonOwnedDirs.newName());
    }

    /** @param poolName the name of the pool's directory, owned by this process in a daemon ({@link DaemonOwnedDirs}) */
    SandboxPool(int size, Factory<T> factory, String poolName) {
        if (size < 0) {
            throw new IllegalArgumentException("pool size must not be negative: " + size);
        }
        this.size = size;
        this.factory = factory;
        this.poolName = poolName;
        this.filler = PoolFiller.named("procbox-sandbox-pool");
    }

    /**
     * Discards the pooled sandboxes of the daemons under {@code root} that no longer run, and their
     * directories. Never throws: what cannot be removed is logged.
     */
    static <T> void removeAbandoned(Path root, Factory<T> factory) {
        try {
            for (Path pool : DaemonOwnedDirs.abandoned(root)) {
                try (DirectoryStream<Path> sandboxes = Files.newDirectoryStream(pool, Files::isDirectory)) {
                    for (Path sandbox : sandboxes) {
                        factory.discard(sandbox.getFileName().toString(), sandbox, null);
                    }
                }
                LOG.log(Level.INFO, "discarded the sandbox pool " + pool + " of a daemon that no longer runs");
                factory.delete(pool);
            }
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot discard the abandoned sandbox pools in " + root + ": " + e.getMessage());
        }
    }

    /**
     * Hands a ready sandbox over as {@code id}, its directory renamed to {@code target} (which must
     * not exist), and starts launching one in its place. Empty if none was ready: the caller
     * launches one itself. The first take starts the pool in {@code root} (where later takes'
     * {@code root} is ignored), after discarding the pools of dead daemons there.
     */
    Optional<T> take(Path root, String id, Path target) {
        Entry<T> entry;
        synchronized (this) {
            if (closed || offReason != null || size == 0) {
                return Optional.empty();
            }
            start(root);
            entry = ready.poll();
            refill();
        }
        if (entry == null) {
            return Optional.empty();
        }
        if (!factory.alive(entry.sandbox())) {
            LOG.log(Level.WARNING, "pooled sandbox " + entry.name() + " died while it waited; launching " + id + " afresh");
            discard(entry);
            return Optional.empty();
        }
        try {
            factory.assign(entry.sandbox(), id);
        } catch (IOException | RuntimeException e) {
            // e.g. the hostname cannot be set on this host: every take would fail the same way and
            // cost a pooled launch on top of the cold one
            turnOff("a pooled sandbox cannot be handed over here: " + e.getMessage());
            discard(entry);
            return Optional.empty();
        }
        try {
            Files.move(entry.dir(), target, StandardCopyOption.ATOMIC_MOVE);
            return Optional.of(entry.sandbox());
        } catch (AtomicMoveNotSupportedException e) {
            turnOff(entry.dir().getParent() + " is not on the filesystem of the sandboxes (" + target.getParent() + ")");
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot hand pooled sandbox " + entry.name() + " over as " + id + ": " + e.getMessage());
        }
        discard(entry);
        return Optional.empty();
    }

    /**
     * Starts the pool in {@code root} if it has not started: discards the pools of dead daemons
     * there, then launches sandboxes up to the bound, in the background.
     */
    synchronized void start(Path root) {
        if (dir != null || closed || size == 0) {
            return;
        }
        dir = root.resolve(poolName);
        filler.execute(() -> removeAbandoned(root, factory));
        refill();
    }

    /** Sandboxes ready to be taken now. */
    synchronized int ready() {
        return ready.size();
    }

    /** Where the pool keeps its sandboxes; null before the first take. */
    synchronized Path dir() {
        return dir;
    }

    /** Null while the pool serves (or has nothing to serve: size 0); else why it stopped. */
    synchronized String offReason() {
        return offReason;
    }

    int size() {
        return size;
    }

    private void turnOff(String why) {
        LOG.log(Level.WARNING, "sandbox pool off: " + why + "; every create launches its sandbox");
        List<Entry<T>> discarded;
        synchronized (this) {
            offReason = why;
            discarded = new ArrayList<>(ready);
            ready.clear();
        }
        discarded.forEach(this::discard);
    }

    /** Schedules launches until the ready sandboxes and those being launched reach the bound; callers hold this. */
    private void refill() {
        while (ready.size() + making < size) {
            making++;
            filler.execute(this::launchOne);
        }
    }

    private void launchOne() {
        Path in;
        synchronized (this) {
            if (closed || offReason != null) {
                making--;
                return;
            }
            in = dir;
        }
        String name = SANDBOX_PREFIX + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        Path sandboxDir = in.resolve(name);
        T sandbox = null;
        try {
            Files.createDirectories(sandboxDir);
            sandbox = factory.launch(name, sandboxDir);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot launch a sandbox for the pool: " + e.getMessage());
        }
        Entry<T> entry = new Entry<>(name, sandboxDir, sandbox);
        synchronized (this) {
            making--;
            if (sandbox != null && !closed && offReason == null) {
                ready.add(entry);
                return;
            }
        }
        discard(entry);
    }

    private void discard(Entry<T> entry) {
        factory.discard(entry.name(), entry.dir(), entry.sandbox());
        try {
            factory.delete(entry.dir());
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot delete the directory of pooled sandbox " + entry.name() + ": " + e.getMessage());
        }
    }

    /**
     * Stops launching, waits for a launch under way to end, then discards every pooled sandbox and
     * the pool's directory; sandboxes already taken (or being taken) are the callers'.
     */
    @Override
    public void close() {
        List<Entry<T>> discarded;
        Path in;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            discarded = new ArrayList<>(ready);
            ready.clear();
            in = dir;
        }
        // a launch under way sees closed when it ends and discards what it made
        filler.shutdown();
        try {
            if (!filler.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                LOG.log(Level.WARNING, "a pooled sandbox's launch did not end within " + CLOSE_WAIT_MILLIS + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        discarded.forEach(this::discard);
        if (in != null) {
            try {
                // only once empty: a take under way may still be moving its sandbox out
                Files.deleteIfExists(in);
            } catch (DirectoryNotEmptyException e) {
                LOG.log(Level.INFO, "left the sandbox pool " + in + ": it is not empty");
            } catch (IOException e) {
                LOG.log(Level.WARNING, "cannot delete the sandbox pool " + in + ": " + e.getMessage());
            }
        }
    }
}
