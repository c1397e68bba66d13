package io.vivarium.backend.procbox.internal;

import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.AttachedVolume;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A running bubblewrap sandbox, created or adopted. Closing it lets go of this revision's hold on
 * it (its agent's idle connections); the sandbox runs on.
 */
final class ProcboxInstance implements SandboxInstance, AutoCloseable {

    private static final String WORKSPACE_DIR = "work";
    private static final String AGENT_DIR = "agent";
    /** Where a sandbox taken from the pool keeps its files, in the directory core gave it. */
    private static final String POOLED_HOME = "pooled";

    private final String id;
    private final Path dir;
    /** The workspace as the daemon walks it ({@link WalkView}), looked up or mounted on the first walk; null until then. */
    private Path walkRoot;
    private final ProcboxRecord sandbox;
    private final GuestChannel channel;
    private final List<AttachedVolume> volumes;
    /** Whether its cgroup is frozen ({@link ProcboxPause}): read once when made or adopted, then kept by pause and resume. */
    private volatile boolean paused;
    private final SandboxNetworks.KnownAddress address;

    /**
     * @param dir the directory of the sandbox's files, which holds its workspace: core's directory
     *        for it, or {@link #home} there
     * @param channel its agent's, or nsenter for a sandbox without one
     * @param volumes the volumes core gave it, which a dry-run's twin binds as the sandbox does
     */
    ProcboxInstance(String id, Path dir, ProcboxRecord sandbox, GuestChannel channel, List<AttachedVolume> volumes) {
        this.volumes = volumes;
        this.id = id;
        this.address = new SandboxNetworks.KnownAddress(id);
        this.dir = dir;
        this.sandbox = sandbox;
        this.channel = channel;
        this.paused = Freezer.of(sandbox).map(Freezer::frozen).orElse(false);
    }

    void paused(boolean frozen) {
        paused = frozen;
    }

    List<AttachedVolume> volumes() {
        return volumes;
    }

    /**
     * On the first walk rather than at create or adoption: a sandbox whose mounts are the host's
     * (an earlier procbox's) may have no view yet, and looking for one reads the host's whole mount
     * table. One whose mounts are its own is reached through its init's root, which each walk first
     * checks is still this init ({@link InitProcess#isRunning}): a pid taken by another sandbox's
     * init would lead the walk into that sandbox.
     */
    private Path walkRoot() {
        return liveWalkRoot().orElseThrow(
                () -> new ApiException(503, "sandbox " + id + " is not running: its workspace went with it"));
    }

    /** {@link #walkRoot}, empty for a sandbox whose workspace went with its init. */
    private synchronized Optional<Path> liveWalkRoot() {
        if (!sandbox.privateMounts()) {
            if (walkRoot == null) {
                walkRoot = WalkView.ensure(dir);
            }
            return Optional.of(walkRoot);
        }
        if (!sandbox.init().isRunning()) {
            return Optional.empty();
        }
        if (walkRoot == null) {
            walkRoot = SandboxMounts.walkRoot(sandbox.init(), id);
        }
        return Optional.of(walkRoot);
    }

    /**
     * Where procbox keeps the files of the sandbox whose directory (from core) is {@code dir}: that
     * directory, or for a sandbox taken from the pool the directory it was launched in, moved there
     * as a whole (that of an earlier procbox's pooled sandbox holds mounts, which cannot be moved one by one).
     */
    static Path home(Path dir) {
        Path pooled = pooledHome(dir);
        return Files.isDirectory(pooled) ? pooled : dir;
    }

    /** Where a sandbox taken from the pool for the directory {@code dir} keeps its files. */
    static Path pooledHome(Path dir) {
        return dir.resolve(POOLED_HOME);
    }

    /**
     * The workspace directory of the sandbox with the private directory {@code dir} on the host:
     * the workspace itself where it is a plain directory (or mounted in the host's namespace by an
     * earlier procbox); where its image is mounted in the sandbox's own namespace, the empty
     * directory the launch mounted it on ({@link #workspaceMount} reaches it).
     */
    static Path workspaceDir(Path dir) {
        return dir.resolve(WORKSPACE_DIR);
    }

    /** The host directory bound at {@value SandboxCommands#AGENT_DIR} in the sandbox with the private directory {@code dir}. */
    static Path agentDir(Path dir) {
        return dir.resolve(AGENT_DIR);
    }

    @Override
    public String id() {
        return id;
    }

    /** The agent's channel does (it connects per call once retired); nsenter's runs procbox's own process code. */
    @Override
    public boolean channelOutlivesBackend() {
        return channel instanceof AgentChannel;
    }

    Path dir() {
        return dir;
    }

    ProcboxRecord sandbox() {
        return sandbox;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(sandbox.init().pid(), sandbox.toData());
    }

    /** {@link InitProcess#runs}. */
    @Override
    public boolean alive() {
        return sandbox.init().runs();
    }

    @Override
    public SandboxStatus status() {
        return !alive() ? SandboxStatus.FAILED : paused ? SandboxStatus.PAUSED : SandboxStatus.RUNNING;
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    @Override
    public String workspace() {
        return SandboxCommands.WORKSPACE;
    }

    @Override
    public Optional<ResourceUsage> usage() {
        // a sandbox whose workspace went with it has its processes' share and no workspace size
        return Optional.of(SandboxUsage.measure(sandbox.init().pid(), liveWalkRoot().orElse(null)));
    }

    @Override
    public Optional<HostFiles> hostFiles() {
        return Optional.of(forWalks());
    }

    /** The workspace through its {@link WalkView}: what the daemon's listings of the live workspace read. */
    HostFiles forWalks() {
        return new HostFiles(walkRoot(), SandboxCommands.WORKSPACE, sandbox.uid(), sandbox.gid());
    }

    /**
     * The workspace with the host uid and gid the sandbox's processes have, which is what the
     * owners of its files are compared with. In a user namespace the sandbox sees itself as root,
     * but that root is the daemon's unprivileged uid on the host: reporting uid 0 would claim
     * every file readable when the daemon, which reads them, cannot open those whose mode denies
     * their owner. (Inside, the sandbox's root may still read those: its namespace lets it
     * override the modes of files its uid owns.) A workspace image mounted in the sandbox's own
     * namespace only is mounted in {@code scratch} for the dry-run's time ({@link SandboxMounts#mountWorkspace}).
     */
    HostFiles workspaceOnHost(DryRunScratch scratch) throws IOException {
        Path image = dir.resolve(WorkspaceImages.IMAGE);
        Path onHost = sandbox.privateMounts() && Files.isRegularFile(image)
                ? SandboxMounts.mountWorkspace(sandbox.init(), image, scratch.lower())
                : workspaceDir(dir);
        return new HostFiles(onHost, SandboxCommands.WORKSPACE, sandbox.uid(), sandbox.gid());
    }


    /** Retires the agent channel's pooled connections: a request that still holds this instance connects for itself. */
    @Override
    public void close() {
        if (channel instanceof AgentChannel agent) {
            agent.close();
        }
    }

    @Override
    public Optional<String> networkAddress() {
        return address.get();
    }
}
