package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * procbox's pool of sandboxes of the default spec launched ahead ({@link SandboxPool} does the
 * pooling): launched and ended by the {@link ProcboxLauncher}, each handed over with its hostname
 * set to the new id, its directory moved into the sandbox's and its workspace linked where a cold
 * sandbox has it.
 */
final class ProcboxSandboxPool implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(ProcboxSandboxPool.class.getName());

    /** Where the sandbox pool lives: beside the sandboxes' directories, on their filesystem. */
    static final String SANDBOX_POOL_DIR = "procbox-pool";

    /** A sandbox of the pool, and the process that gives it its hostname when it is handed over. */
    private record Pooled(ProcboxLauncher.Launched launched, HostnameSetter hostname) {
    }

    private final ProcboxLauncher launcher;
    private final SandboxCommands commands;
    private final Factory factory = new Factory();
    private final SandboxPool<Pooled> pool;

    /**
     * @param size how many sandboxes to keep launched ahead; 0 for none
     * @param name the name of the pool's directory ({@link DaemonOwnedDirs}), or null for one owned
     *        by this process
     */
    ProcboxSandboxPool(ProcboxLauncher launcher, SandboxCommands commands, int size, String name) {
        this.launcher = launcher;
        this.commands = commands;
        this.pool = pool(size, name);
    }

    private SandboxPool<Pooled> pool(int size, String name) {
        if (name != null) {
            return new SandboxPool<>(size, factory, name);
        }
        try {
            return new SandboxPool<>(size, factory);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "no sandbox pool: " + e.getMessage());
            return new SandboxPool<>(0, factory, "none");
        }
    }

    /**
     * A ready sandbox handed over as the sandbox of {@code spec}, if {@code spec} is the default
     * one and one is ready; empty if the caller must launch it. The first take starts the pool.
     */
    Optional<ProcboxInstance> take(InstanceSpec spec) {
        if (!pooledSpec(spec)) {
            return Optional.empty();
        }
        Path home = ProcboxInstance.pooledHome(spec.dir());
        Optional<Pooled> pooled = pool.take(spec.dir().getParent().resolveSibling(SANDBOX_POOL_DIR), spec.id(), home);
        if (pooled.isEmpty()) {
            return Optional.empty();
        }
        ProcboxLauncher.Launched launched = pooled.get().launched();
        linkPooledWorkspace(spec);
        return Optional.of(new ProcboxInstance(spec.id(), home, launched.sandbox(),
                launched.channel().forSandbox(spec.id()), spec.volumes()));
    }

    /** What the pool holds: sandboxes with every setting at its default. */
    private static boolean pooledSpec(InstanceSpec spec) {
        return spec.memoryLimitMib() == null && spec.pidsLimit() == null && spec.diskLimitMib() == null
                && spec.vcpus() == null && spec.image() == null && spec.volumes().isEmpty() && spec.root() == null;
    }

    /**
     * Links {@code work} in the sandbox's directory to the workspace directory of the pooled sandbox
     * moved there, so that it is where every other sandbox's is (a plain directory's workspace, or
     * the mount point of an image mounted in the sandbox's namespace). Failing, the create
     * fails, and its clean-up destroys the sandbox by the record in its directory.
     */
    private static void linkPooledWorkspace(InstanceSpec spec) {
        Path home = ProcboxInstance.pooledHome(spec.dir());
        try {
            Files.createSymbolicLink(ProcboxInstance.workspaceDir(spec.dir()),
                    spec.dir().relativize(ProcboxInstance.workspaceDir(home)));
        } catch (IOException e) {
            throw ApiException.internal("cannot link the workspace of sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
    }

    /** For operators: how creates of the default spec are served. */
    String describe() {
        if (pool.size() == 0) {
            return "none (sandbox_pool_size is 0): every create launches its sandbox";
        }
        String off = pool.offReason();
        if (off != null) {
            return "off (" + off + "): every create launches its sandbox";
        }
        Path dir = pool.dir();
        return "up to " + pool.size() + " sandboxes of the default spec launched ahead"
                + (dir == null ? ", from the first create on" : " in " + dir + ", " + pool.ready() + " ready");
    }

    /** Starts the pool beside the sandboxes of {@code stateDir}, ahead of the first create. */
    void start(Path stateDir) {
        pool.start(stateDir.resolve(SANDBOX_POOL_DIR));
    }

    /** Pooled sandboxes ready to be taken now. */
    int ready() {
        return pool.ready();
    }

    /**
     * Discards the pooled sandboxes a daemon that no longer runs left in {@code stateDir} (killed
     * with -9): at activation, before any create tells where the sandboxes live.
     */
    void removeAbandoned(Path stateDir) {
        SandboxPool.removeAbandoned(stateDir.resolve(SANDBOX_POOL_DIR), factory);
    }

    /** Discards the pooled sandboxes; those handed out run on. */
    @Override
    public void close() {
        pool.close();
    }

    /** Launches the pool's sandboxes as starts of the default spec do, and ends them as destroy does. */
    private final class Factory implements SandboxPool.Factory<Pooled> {

        @Override
        public Pooled launch(String name, Path dir) {
            ProcboxLauncher.Launched launched = launcher.launchForPool(new InstanceSpec(name, dir, null));
            try {
                // what a destroy without core's record goes by, once the sandbox is handed over
                launched.sandbox().writePooled(dir);
                return new Pooled(launched, HostnameSetter.start(commands, launched.sandbox(), LaunchFiles.in(dir).logFile()));
            } catch (IOException e) {
                launched.channel().close();
                throw new UncheckedIOException("cannot ready pooled sandbox " + name + ": " + e.getMessage(), e);
            }
        }

        @Override
        public boolean alive(Pooled sandbox) {
            return sandbox.launched().sandbox().init().isRunning();
        }

        @Override
        public void assign(Pooled sandbox, String id) throws IOException {
            sandbox.hostname().set(SandboxCommands.hostname(id));
        }

        @Override
        public void discard(String name, Path dir, Pooled sandbox) {
            if (sandbox != null) {
                sandbox.hostname().close();
                sandbox.launched().channel().close();
            }
            try {
                launcher.end(new InstanceSpec(name, dir, null), new InstanceState(0, Map.of()));
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "cannot end pooled sandbox " + name + " in " + dir + ": " + e.getMessage());
            }
        }

        @Override
        public void delete(Path dir) throws IOException {
            HostTools.AS_DAEMON.removeTree(dir);
        }
    }
}
