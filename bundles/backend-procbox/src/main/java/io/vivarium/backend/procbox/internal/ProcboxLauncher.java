package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Optional;

/**
 * How a sandbox is started, for a create and for a fork alike, and how what a start made is
 * undone: the limits checked against the host, the workspace (a fresh image, a fork's copied one or
 * a plain directory), the agent directory, the cgroups and the walk view prepared, the detached
 * launch ({@link SandboxLauncher}), the agent directory sealed in a user namespace; and, for a create
 * of the default spec, a sandbox of the pool launched ahead ({@link ProcboxSandboxPool}) taken instead.
 */
final class ProcboxLauncher implements AutoCloseable {

    private static final Duration KILL_WAIT = Duration.ofSeconds(2);
    private static final Duration CGROUP_REMOVAL_WAIT = Duration.ofSeconds(2);

    private final ProcboxSettings settings;
    private final ProcboxHostProbe probe;
    private final SandboxLauncher processes;
    /** Sandboxes of the default spec launched ahead of the starts that take them. */
    private final ProcboxSandboxPool pool;

    /**
     * @param sandboxPoolName the name of the sandbox pool's directory ({@link DaemonOwnedDirs}), or
     *        null for one owned by this process
     */
    ProcboxLauncher(ProcboxSettings settings, ProcboxHostProbe probe, SandboxCommands commands, String sandboxPoolName) {
        this.settings = settings;
        this.probe = probe;
        this.processes = new SandboxLauncher(commands);
        // the pool launches through this launcher only once a start (or the runtime) starts it
        this.pool = new ProcboxSandboxPool(this, commands, settings.sandboxPoolSize(), sandboxPoolName);
    }

    /**
     * Starts a sandbox; with {@code copiedImage} (a fork: the workspace image already made in its
     * directory from a snapshot) that image is mounted instead of a fresh one. A start of the
     * default spec takes a pooled sandbox when one is ready. The instance holds its agent's channel,
     * which the caller records.
     */
    ProcboxInstance start(InstanceSpec spec, Path copiedImage) {
        Availability availability = probe.availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        if (copiedImage == null) {
            Optional<ProcboxInstance> pooled = pool.take(spec);
            if (pooled.isPresent()) {
                return pooled.get();
            }
        }
        Launched launched = launch(spec, copiedImage);
        return new ProcboxInstance(spec.id(), spec.dir(), launched.sandbox(), launched.channel(), spec.volumes());
    }

    /** A running sandbox, and the channel to its agent (not yet recorded). */
    record Launched(ProcboxRecord sandbox, AgentChannel channel) {
    }

    private Launched launch(InstanceSpec spec, Path copiedImage) {
        LimitCgroups cgroups = probe.memoryCgroups();
        LimitCgroups pidsCgroups = probe.pidsCgroups();
        WorkspaceImages workspaces = probe.workspaces();
        Integer limitMib = spec.memoryLimitMib();
        if (limitMib != null && limitMib <= 0) {
            throw ApiException.badRequest("memory_limit_mib must be positive");
        }
        if (limitMib != null && !cgroups.supported()) {
            throw ApiException.notImplemented("memory_limit_mib is not supported on this host: "
                    + cgroups.unsupportedReason());
        }
        int pidsLimit = limit("pids_limit", spec.pidsLimit(), settings.defaultPidsLimit(), pidsCgroups.supported(),
                pidsCgroups.unsupportedReason());
        int diskLimitMib = limit("disk_limit_mib", spec.diskLimitMib(), settings.defaultDiskLimitMib(),
                workspaces.supported(), workspaces.unsupportedReason());
        boolean userNamespace = settings.userNamespace();
        if (spec.root() != null && userNamespace) {
            throw ApiException.notImplemented("procbox starts sandboxes on a template's image only when the daemon runs as "
                    + "root (its sandboxes then run as the image's user); this daemon runs unprivileged");
        }
        int uid = userNamespace ? ProcFs.effectiveUid() : spec.root() != null ? spec.root().uidOr(settings.uid()) : settings.uid();
        int gid = userNamespace ? ProcFs.effectiveGid() : spec.root() != null ? spec.root().gidOr(settings.gid()) : settings.gid();
        Path rootfs = spec.root() == null ? null : spec.root().rootfs();
        Path workDir = prepareWorkspace(ProcboxInstance.workspaceDir(spec.dir()), uid, gid);
        // only the default size is pooled: a create that asks for its own size copies its template
        WorkspaceImage image = copiedImage != null ? new WorkspaceImage(null, copiedImage) : diskLimitMib == 0 ? null
                : workspaceImage(spec, diskLimitMib, uid, gid, spec.diskLimitMib() == null);
        Path agentDir = prepareAgentDir(ProcboxInstance.agentDir(spec.dir()));
        Path cgroup = null;
        Path pidsCgroup = null;
        Path freezerCgroup = null;
        try {
            cgroup = limitMib == null ? null : createCgroup(cgroups, spec.id(), limitMib);
            pidsCgroup = pidsLimit == 0 ? null : createCgroup(pidsCgroups, spec.id(), pidsLimit);
            freezerCgroup = freezerCgroup(spec.id());
            Path view = probe.walkViews() ? walkView(spec) : null;
            SandboxLauncher.Started started = processes.launch(spec.id(), spec.dir(), workDir, view,
                    ProcboxRecord.cgroups(cgroup, pidsCgroup, freezerCgroup), image, agentDir, uid, gid, userNamespace,
                    spec.volumes(), rootfs);
            // the launch mounts the image and the view in a namespace of its own (SandboxCommands.LAUNCH)
            ProcboxRecord sandbox = new ProcboxRecord(started.init(), uid, gid, cgroup, pidsCgroup, userNamespace,
                    SandboxCommands.AGENT_SOCKET, freezerCgroup, rootfs, image != null || view != null);
            if (userNamespace) {
                sealAgentDir(spec.id(), sandbox, started);
            }
            return new Launched(sandbox, new AgentChannel(spec.id(), started.init(), started.socket(), started.agent()));
        } catch (RuntimeException e) {
            for (Path made : ProcboxRecord.cgroups(cgroup, pidsCgroup, freezerCgroup)) {
                LimitCgroups.remove(made, CGROUP_REMOVAL_WAIT);
            }
            try {
                removeWalkView(spec.id(), spec.dir());
                unmountWorkspace(spec.id(), spec.dir());
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /**
     * The limit asked for, else the default where this host can enforce it; 0 for none. A limit
     * asked for that the host cannot enforce is refused rather than silently dropped.
     */
    private static int limit(String field, Integer asked, int byDefault, boolean supported, String unsupportedReason) {
        if (asked == null) {
            return supported ? byDefault : 0;
        }
        if (asked <= 0) {
            throw ApiException.badRequest(field + " must be positive");
        }
        if (!supported) {
            throw ApiException.notImplemented(field + " is not supported on this host: " + unsupportedReason);
        }
        return asked;
    }

    private WorkspaceImage workspaceImage(InstanceSpec spec, int sizeMib, int uid, int gid, boolean pooled) {
        try {
            return probe.workspaces().forSandbox(spec.dir(), sizeMib, uid, gid, pooled);
        } catch (IOException e) {
            throw ApiException.internal("cannot prepare the workspace image of sandbox " + spec.id() + ": "
                    + e.getMessage(), e);
        }
    }

    /** Where the launch binds the workspace's walk view, made ready here. */
    private static Path walkView(InstanceSpec spec) {
        try {
            return WalkView.forLaunch(spec.dir());
        } catch (IOException e) {
            throw ApiException.internal("cannot prepare the workspace view of sandbox " + spec.id() + ": "
                    + e.getMessage(), e);
        }
    }

    private static Path prepareWorkspace(Path workDir, int uid, int gid) {
        try {
            Files.createDirectories(workDir);
            Files.setAttribute(workDir, "unix:uid", uid);
            Files.setAttribute(workDir, "unix:gid", gid);
            return workDir;
        } catch (IOException e) {
            throw ApiException.internal("cannot prepare the workspace " + workDir + ": " + e.getMessage(), e);
        }
    }

    /**
     * In a user namespace the sandbox's processes have the agent's uid, so they could replace its
     * socket with a symlink that the daemon's next connect would follow (to another sandbox's
     * agent, say). Once the agent has bound it, and before anything else runs there, its directory
     * is made read-only inside the sandbox, which its processes (without capabilities) cannot undo;
     * the sandbox's root is read-only too ({@code --remount-ro /}), so {@code /run} cannot be
     * swapped either. As root the directory is root's and the sandbox user cannot write to it.
     */
    private static void sealAgentDir(String sandboxId, ProcboxRecord sandbox, SandboxLauncher.Started started) {
        try {
            HostTools.insideUserNamespace(sandbox).run("mount", "-o", "remount,bind,ro", SandboxCommands.AGENT_DIR);
        } catch (IOException e) {
            started.agent().close();
            sandbox.init().kill(KILL_WAIT);
            throw ApiException.internal("cannot make the agent directory of sandbox " + sandboxId + " read-only: "
                    + e.getMessage(), e);
        }
    }

    /**
     * The directory the agent binds its socket in: the daemon's, not writable by the sandbox user,
     * so the sandbox can neither reach the socket (0600) nor swap it for a link the daemon would follow.
     */
    private static Path prepareAgentDir(Path agentDir) {
        try {
            Files.createDirectories(agentDir);
            Files.setPosixFilePermissions(agentDir, PosixFilePermissions.fromString("rwxr-xr-x"));
            return agentDir;
        } catch (IOException e) {
            throw ApiException.internal("cannot prepare the agent directory " + agentDir + ": " + e.getMessage(), e);
        }
    }

    private Path freezerCgroup(String sandboxId) {
        try {
            return probe.freezer().create(sandboxId).orElse(null);
        } catch (IOException e) {
            throw ApiException.internal("cannot create the freezer cgroup of sandbox " + sandboxId + ": " + e, e);
        }
    }

    private static Path createCgroup(LimitCgroups in, String sandboxId, int limit) {
        try {
            return in.create(sandboxId, limit);
        } catch (IOException e) {
            throw ApiException.internal("cannot create a cgroup of sandbox " + sandboxId + ": " + e, e);
        }
    }

    /**
     * Kills the sandbox's init, which takes its whole PID namespace with it (and the mount namespaces
     * that alone hold its workspace image and view, {@link ProcboxRecord#privateMounts}; those of an
     * earlier procbox's sandbox are unmounted from the host's), then removes its cgroups. Leaves
     * {@code spec.dir()} to core, but not before any dry-run overlay mounted in it is gone: core's
     * recursive delete would walk into it. Without a recorded state (the daemon
     * stopped before create returned) a sandbox from the pool is known by the record the pool
     * left in its directory, any other by its launch files. Idempotent.
     */
    void end(InstanceSpec spec, InstanceState state) {
        Path home = ProcboxInstance.home(spec.dir());
        ProcboxRecord sandbox;
        try {
            sandbox = ProcboxRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            sandbox = ProcboxRecord.readPooled(home).orElse(null);
        }
        if (sandbox == null) {
            processes.killUnrecorded(home);
            probe.memoryCgroups().existing(spec.id()).ifPresent(cgroup -> LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            probe.pidsCgroups().existing(spec.id()).ifPresent(cgroup -> LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            probe.freezer().existing(spec.id()).ifPresent(cgroup -> LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            removeWalkView(spec.id(), home);
            unmountWorkspace(spec.id(), home);
            return;
        }
        thaw(spec.id(), sandbox);
        // while the init lives, the leftovers can be removed with its access to the workspace
        DryRunScratch.discardLeftovers(spec.id(), home, HostTools.withAccessOf(sandbox));
        if (!sandbox.privateMounts()) {
            removeWalkView(spec.id(), home);
        }
        sandbox.init().kill(KILL_WAIT);
        if (!sandbox.privateMounts()) {
            unmountWorkspace(spec.id(), home);
        }
        for (Path cgroup : sandbox.cgroups()) {
            if (!LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT)) {
                throw ApiException.internal("the cgroup " + cgroup + " of sandbox " + spec.id()
                        + " still has processes", null);
            }
        }
    }

    /** A frozen process dies only once thawed (cgroup v1), and a leftover of a dry-run needs its sandbox running. */
    private static void thaw(String sandboxId, ProcboxRecord sandbox) {
        Optional<Path> freezer = Freezer.of(sandbox);
        if (freezer.isPresent() && Freezer.frozen(freezer.get())) {
            try {
                Freezer.set(freezer.get(), false);
            } catch (IOException e) {
                throw ApiException.internal("cannot thaw sandbox " + sandboxId + " to end it: " + e.getMessage(), e);
            }
        }
    }

    /** Unmounts the workspace image in {@code home}, before its directory is deleted. */
    private static void unmountWorkspace(String sandboxId, Path home) {
        try {
            WorkspaceImages.unmount(ProcboxInstance.workspaceDir(home));
        } catch (IOException e) {
            throw ApiException.internal("cannot unmount the workspace of sandbox " + sandboxId + ": " + e.getMessage(), e);
        }
    }

    private static void removeWalkView(String sandboxId, Path home) {
        try {
            WalkView.remove(home);
        } catch (IOException e) {
            throw ApiException.internal("cannot unmount the workspace view of sandbox " + sandboxId + ": " + e.getMessage(), e);
        }
    }

    /** Starts a sandbox of the default spec for the pool, as a start without a pool does; the caller ends it with {@link #end}. */
    Launched launchForPool(InstanceSpec spec) {
        return launch(spec, null);
    }

    /** The pool of sandboxes launched ahead that starts of the default spec take from. */
    ProcboxSandboxPool pool() {
        return pool;
    }

    /** Discards the pooled sandboxes and ends the launch server; sandboxes handed out run on. */
    @Override
    public void close() {
        pool.close();
        processes.close();
    }
}
