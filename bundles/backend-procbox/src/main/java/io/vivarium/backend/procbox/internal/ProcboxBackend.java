package io.vivarium.backend.procbox.internal;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.Optional;

/**
 * Process sandboxes: a bubblewrap process tree per sandbox, in its own PID, mount, network, IPC,
 * UTS and cgroup namespaces, with the host's /usr and /etc read-only and a private workspace at
 * {@code /work}. The sandbox's keep-alive is the guest agent, which the daemon reaches on its Unix
 * socket ({@link AgentChannel}). Sandboxes are detached from the daemon
 * and outlive it; they are found again by the pid and start time of their init. Dry-runs run in a
 * short-lived twin of a sandbox ({@link DryRunner}).
 */
final class ProcboxBackend implements SandboxBackend, AutoCloseable {

    static final String NAME = "procbox";

    private static final System.Logger LOG = System.getLogger(ProcboxBackend.class.getName());

    private static final List<String> UTIL_LINUX_TOOLS =
            List.of(SandboxCommands.SETSID, SandboxCommands.NSENTER, SandboxCommands.SETPRIV);
    private static final Duration KILL_WAIT = Duration.ofSeconds(2);
    private static final Duration CGROUP_REMOVAL_WAIT = Duration.ofSeconds(2);
    /** Where the sandbox pool lives: beside the sandboxes' directories, on their filesystem. */
    static final String SANDBOX_POOL_DIR = "procbox-pool";

    private final ProcboxSettings settings;
    private final LimitCgroups cgroups;
    private final LimitCgroups pidsCgroups;
    private final WorkspaceImages workspaces;
    private final SandboxCommands commands;
    private final SandboxLauncher launcher;
    private final DryRunner dryRunner;
    private final Supplier<String> bwrapVersion;
    /** Why live workspaces are walked without a nosymfollow view, probed once; null until then. */
    private volatile Optional<String> walkDegradation;
    /** The host's agent binary, or null if it could not be written ({@link #agentProblem} says why). */
    private final Path agentBinary;
    private final String agentProblem;
    /** The agent channels of the sandboxes this backend created or adopted, closed with it. */
    private final Map<String, AgentChannel> channels = new ConcurrentHashMap<>();
    private final PoolFactory poolFactory = new PoolFactory();
    /** Sandboxes of the default spec launched ahead of the creates that take them. */
    private final SandboxPool<Pooled> sandboxPool;

    ProcboxBackend(ProcboxSettings settings) {
        this(settings, true);
    }

    /** @param overlayDryRuns false to dry-run on copies of the workspace even as root */
    ProcboxBackend(ProcboxSettings settings, boolean overlayDryRuns) {
        this(settings, overlayDryRuns, null);
    }

    /**
     * @param sandboxPoolName the name of the sandbox pool's directory ({@link DaemonOwnedDirs}), or
     *        null for one owned by this process
     */
    ProcboxBackend(ProcboxSettings settings, boolean overlayDryRuns, String sandboxPoolName) {
        this.settings = settings;
        this.cgroups = LimitCgroups.detect(settings.cgroupRoot(), LimitCgroups.Controller.MEMORY);
        this.pidsCgroups = LimitCgroups.detect(settings.cgroupRoot(), LimitCgroups.Controller.PIDS);
        this.workspaces = WorkspaceImages.detect(settings.templateDir(), ProcFs.effectiveUid() == 0,
                settings.workspacePoolSize());
        this.bwrapVersion = new BwrapVersion(settings.bwrap());
        Path binary = null;
        String problem = null;
        try {
            binary = AgentBinary.install(settings.agentDir());
        } catch (IOException | RuntimeException e) {
            problem = "cannot write the guest agent binary to " + settings.agentDir() + ": " + e.getMessage();
            LOG.log(Level.ERROR, problem, e);
        }
        this.agentBinary = binary;
        this.agentProblem = problem;
        this.commands = new SandboxCommands(settings.bwrap(), HostRootLayout.bwrapArgs(Path.of("/")),
                ProcFs.noNewPrivileges(), binary);
        this.launcher = new SandboxLauncher(commands);
        this.dryRunner = new DryRunner(commands, overlayDryRuns);
        this.sandboxPool = sandboxPool(settings.sandboxPoolSize(), sandboxPoolName);
    }

    private SandboxPool<Pooled> sandboxPool(int size, String name) {
        if (name != null) {
            return new SandboxPool<>(size, poolFactory, name);
        }
        try {
            return new SandboxPool<>(size, poolFactory);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "no sandbox pool: " + e.getMessage());
            return new SandboxPool<>(0, poolFactory, "none");
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Capabilities capabilities() {
        return new Capabilities(true, false, false, false, true, true, false, true, cgroups.supported(), false, false,
                pidsCgroups.supported(), workspaces.supported());
    }

    /** How sandboxes are isolated and entered here; the bubblewrap version is asked once. */
    @Override
    public Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(DETAIL_ISOLATION, bwrapVersion.get());
        d.put(DETAIL_AGENT, SandboxCommands.AGENT_NAME);
        d.put("memory_cgroup", cgroups.describe());
        d.put("pids_cgroup", pidsCgroups.describe());
        d.put("workspace", workspaces.describe());
        d.put("sandbox_pool", describePool());
        d.put("images", ProcboxImages.DESCRIPTION);
        d.put("sandbox_user", settings.userNamespace() ? "the daemon's uid " + ProcFs.effectiveUid()
                + " in a user namespace (the daemon is not root)" : "uid " + settings.uid() + ", gid " + settings.gid());
        return d;
    }

    /** Checked on every call, so installing bubblewrap makes the backend available without a restart. */
    @Override
    public Availability availability() {
        if (!Files.isExecutable(settings.bwrap())) {
            return Availability.no("bubblewrap is not installed"
                    + (settings.bwrap().equals(Path.of("/usr/bin/bwrap")) ? "" : " at " + settings.bwrap())
                    + ": apt-get install bubblewrap");
        }
        if (agentBinary == null) {
            return Availability.no(agentProblem);
        }
        for (String tool : UTIL_LINUX_TOOLS) {
            if (!Files.isExecutable(Path.of(tool))) {
                return Availability.no(tool + " is missing: apt-get install util-linux");
            }
        }
        // an available backend's reason says what it does less safely than it should
        return walkDegradation().map(reason -> new Availability(true, reason)).orElse(Availability.yes());
    }

    private Optional<String> walkDegradation() {
        Optional<String> known = walkDegradation;
        if (known == null) {
            known = WalkView.degradation(Path.of(System.getProperty("java.io.tmpdir")));
            if (known.isPresent()) {
                LOG.log(Level.WARNING, known.get());
            }
            walkDegradation = known;
        }
        return known;
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return createWithImage(spec, null);
    }

    /**
     * Creates a sandbox; with {@code copiedImage} (a fork: the workspace image already made in its
     * directory from a snapshot) that image is mounted instead of a fresh one. A create of the
     * default spec takes a pooled sandbox when one is ready.
     */
    SandboxInstance createWithImage(InstanceSpec spec, Path copiedImage) {
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        if (copiedImage == null && pooledSpec(spec)) {
            Optional<Pooled> pooled = sandboxPool.take(spec.dir().getParent().resolveSibling(SANDBOX_POOL_DIR),
                    spec.id(), ProcboxInstance.pooledHome(spec.dir()));
            if (pooled.isPresent()) {
                Launched launched = pooled.get().launched();
                linkPooledWorkspace(spec);
                return new ProcboxInstance(spec.id(), ProcboxInstance.pooledHome(spec.dir()), launched.sandbox(),
                        register(spec.id(), launched.channel().forSandbox(spec.id())));
            }
        }
        Launched launched = launch(spec, copiedImage);
        return new ProcboxInstance(spec.id(), spec.dir(), launched.sandbox(), register(spec.id(), launched.channel()));
    }

    /**
     * Links {@code work} in the sandbox's directory to the workspace of the pooled sandbox moved
     * there, so that it is where operators (and every other sandbox's) have it. Failing, the create
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

    /** What the pool holds: sandboxes with every setting at its default. */
    private static boolean pooledSpec(InstanceSpec spec) {
        return spec.memoryLimitMib() == null && spec.pidsLimit() == null && spec.diskLimitMib() == null
                && spec.vcpus() == null && spec.image() == null;
    }

    /** A running sandbox, and the channel to its agent (not yet registered). */
    record Launched(SandboxRecord sandbox, AgentChannel channel) {
    }

    /** A sandbox of the pool, and the process that gives it its hostname when it is handed over. */
    record Pooled(Launched launched, HostnameSetter hostname) {
    }

    private Launched launch(InstanceSpec spec, Path copiedImage) {
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
        int uid = userNamespace ? ProcFs.effectiveUid() : settings.uid();
        int gid = userNamespace ? ProcFs.effectiveGid() : settings.gid();
        Path workDir = prepareWorkspace(ProcboxInstance.workspaceDir(spec.dir()), uid, gid);
        // only the default size is pooled: a create that asks for its own size copies its template
        WorkspaceImage image = copiedImage != null ? new WorkspaceImage(null, copiedImage) : diskLimitMib == 0 ? null
                : workspaceImage(spec, diskLimitMib, uid, gid, spec.diskLimitMib() == null);
        Path agentDir = prepareAgentDir(ProcboxInstance.agentDir(spec.dir()));
        Path cgroup = null;
        Path pidsCgroup = null;
        try {
            cgroup = limitMib == null ? null : createCgroup(cgroups, spec.id(), limitMib);
            pidsCgroup = pidsLimit == 0 ? null : createCgroup(pidsCgroups, spec.id(), pidsLimit);
            // a fork's children get their walk view on their first walk (WalkView.ensure), not here:
            // a fork of many launches them side by side, and a view is one more mount in each launch
            // and in the host's mount table, which every later loop mount and bwrap reads
            Path view = copiedImage == null ? walkView(spec) : null;
            SandboxLauncher.Started started = launcher.launch(spec.id(), spec.dir(), workDir, view,
                    SandboxRecord.cgroups(cgroup, pidsCgroup), image, agentDir, uid, gid, userNamespace);
            SandboxRecord sandbox = new SandboxRecord(started.init(), uid, gid, cgroup, pidsCgroup, userNamespace,
                    SandboxCommands.AGENT_SOCKET);
            if (userNamespace) {
                sealAgentDir(spec.id(), sandbox, started);
            }
            return new Launched(sandbox, new AgentChannel(spec.id(), started.init(), started.socket(), started.agent()));
        } catch (RuntimeException e) {
            for (Path made : SandboxRecord.cgroups(cgroup, pidsCgroup)) {
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
            return workspaces.forSandbox(spec.dir(), sizeMib, uid, gid, pooled);
        } catch (IOException e) {
            throw ApiException.internal("cannot prepare the workspace image of sandbox " + spec.id() + ": "
                    + e.getMessage(), e);
        }
    }

    /** Where the launch binds the workspace's walk view, made ready here; null where the daemon cannot mount. */
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
    private static void sealAgentDir(String sandboxId, SandboxRecord sandbox, SandboxLauncher.Started started) {
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

    private AgentChannel register(String sandboxId, AgentChannel channel) {
        AgentChannel replaced = channels.put(sandboxId, channel);
        if (replaced != null) {
            replaced.close();
        }
        return channel;
    }

    /** Images of this backend's sandboxes: their workspace files. */
    ProcboxImages images() {
        return new ProcboxImages(this, workspaces.supported());
    }

    private String describePool() {
        if (sandboxPool.size() == 0) {
            return "none (sandbox_pool_size is 0): every create launches its sandbox";
        }
        String off = sandboxPool.offReason();
        if (off != null) {
            return "off (" + off + "): every create launches its sandbox";
        }
        Path dir = sandboxPool.dir();
        return "up to " + sandboxPool.size() + " sandboxes of the default spec launched ahead"
                + (dir == null ? ", from the first create on" : " in " + dir + ", " + sandboxPool.ready() + " ready");
    }

    /** Starts the sandbox pool beside the sandboxes of {@code stateDir}, ahead of the first create. */
    void startSandboxPool(Path stateDir) {
        sandboxPool.start(stateDir.resolve(SANDBOX_POOL_DIR));
    }

    /** Pooled sandboxes ready to be taken now. */
    int pooledReady() {
        return sandboxPool.ready();
    }

    /**
     * Discards the pooled sandboxes a daemon that no longer runs left in {@code stateDir} (killed
     * with -9): at activation, before any create tells where the sandboxes live.
     */
    void removeAbandonedPools(Path stateDir) {
        SandboxPool.removeAbandoned(stateDir.resolve(SANDBOX_POOL_DIR), poolFactory);
    }

    /**
     * Discards the pooled sandboxes, drops the idle agent connections of every other sandbox and
     * the pool of ready workspace images; sandboxes handed out run on.
     */
    @Override
    public void close() {
        sandboxPool.close();
        channels.values().forEach(AgentChannel::close);
        channels.clear();
        workspaces.close();
    }

    /**
     * {@link #close} on a thread of its own, returned started: for a revision being replaced, whose
     * successor (and the requests core holds until it registers) need not wait for pooled sandboxes
     * to end. Both pools' directories are named for this revision alone ({@link DaemonOwnedDirs}),
     * so the successor's never meet them, and a daemon killed meanwhile leaves them to the next
     * daemon's start like any pool of a dead daemon.
     */
    Thread closeInBackground() {
        Thread closing = new Thread(this::close, "procbox-close");
        closing.setContextClassLoader(null);
        closing.start();
        return closing;
    }

    private static Path createCgroup(LimitCgroups in, String sandboxId, int limit) {
        try {
            return in.create(sandboxId, limit);
        } catch (IOException e) {
            throw ApiException.internal("cannot create a cgroup of sandbox " + sandboxId + ": " + e, e);
        }
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        SandboxRecord sandbox;
        try {
            sandbox = SandboxRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        if (!sandbox.init().isRunning()) {
            throw new InstanceGoneException("init process " + sandbox.init().pid() + " is gone");
        }
        Path home = ProcboxInstance.home(spec.dir());
        try {
            discardDryRunLeftovers(spec.id(), home, HostTools.withAccessOf(sandbox));
        } catch (ApiException e) {
            // the sandbox itself is fine; destroy tries again before its directory goes
            LOG.log(Level.WARNING, e.getMessage());
        }
        return new ProcboxInstance(spec.id(), home, sandbox, channel(spec.id(), sandbox));
    }

    /** The same agent on its recorded socket; nsenter into a sandbox made before procbox had an agent. */
    private GuestChannel channel(String sandboxId, SandboxRecord sandbox) {
        if (sandbox.agentSocket() == null) {
            return new NsenterChannel(sandboxId, sandbox, commands);
        }
        Path socket = AgentChannel.socket(sandbox.init(), sandbox.agentSocket());
        return register(sandboxId, new AgentChannel(sandboxId, sandbox.init(), socket, AgentChannel.client(sandbox.init(), socket)));
    }

    /**
     * Kills the sandbox's init, which takes its whole PID namespace with it, then unmounts its
     * workspace image and removes its cgroups. Leaves {@code spec.dir()} to core, but not before any dry-run overlay mounted in it
     * is gone: core's recursive delete would walk into it. Without a recorded state (the daemon
     * stopped before create returned) a sandbox from the pool is known by the record the pool
     * left in its directory, any other by its launch files.
     */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        AgentChannel channel = channels.remove(spec.id());
        if (channel != null) {
            channel.close();
        }
        Path home = ProcboxInstance.home(spec.dir());
        SandboxRecord sandbox;
        try {
            sandbox = SandboxRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            sandbox = SandboxRecord.readPooled(home).orElse(null);
        }
        if (sandbox == null) {
            launcher.killUnrecorded(home);
            cgroups.existing(spec.id()).ifPresent(cgroup -> LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            pidsCgroups.existing(spec.id()).ifPresent(cgroup -> LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            removeWalkView(spec.id(), home);
            unmountWorkspace(spec.id(), home);
            return;
        }
        // while the init lives, the leftovers can be removed with its access to the workspace
        discardDryRunLeftovers(spec.id(), home, HostTools.withAccessOf(sandbox));
        removeWalkView(spec.id(), home);
        sandbox.init().kill(KILL_WAIT);
        unmountWorkspace(spec.id(), home);
        for (Path cgroup : sandbox.cgroups()) {
            if (!LimitCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT)) {
                throw ApiException.internal("the cgroup " + cgroup + " of sandbox " + spec.id()
                        + " still has processes", null);
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

    @Override
    public ScratchRun dryRun(SandboxInstance instance, ExecRequest request) {
        if (!(instance instanceof ProcboxInstance procbox)) {
            throw new IllegalArgumentException("not a procbox instance: " + instance.getClass().getName());
        }
        return dryRunner.run(procbox, request);
    }

    private static void removeWalkView(String sandboxId, Path home) {
        try {
            WalkView.remove(home);
        } catch (IOException e) {
            throw ApiException.internal("cannot unmount the workspace view of sandbox " + sandboxId + ": " + e.getMessage(), e);
        }
    }

    /** Ends, unmounts and removes what dry-runs interrupted by a crash of the daemon left behind. */
    private static void discardDryRunLeftovers(String sandboxId, Path home, HostTools tools) {
        try {
            for (DryRunScratch leftover : DryRunScratch.leftovers(home)) {
                leftover.discard(tools);
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot discard what an interrupted dry-run left in sandbox " + sandboxId
                    + ": " + e.getMessage(), e);
        }
    }

    /** Launches the pool's sandboxes as creates of the default spec do, and ends them as destroy does. */
    private final class PoolFactory implements SandboxPool.Factory<Pooled> {

        @Override
        public Pooled launch(String name, Path dir) {
            Launched launched = ProcboxBackend.this.launch(new InstanceSpec(name, dir, null), null);
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
                destroy(new InstanceSpec(name, dir, null), new InstanceState(0, Map.of()));
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
