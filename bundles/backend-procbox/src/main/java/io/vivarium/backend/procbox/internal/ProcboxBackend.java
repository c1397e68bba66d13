package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Process sandboxes: a bubblewrap process tree per sandbox, in its own PID, mount, network, IPC,
 * UTS and cgroup namespaces, with the host's /usr and /etc read-only and a private workspace at
 * {@code /work}. Sandboxes are detached from the daemon and outlive it; they are found again by
 * the pid and start time of their init. Dry-runs run in a short-lived twin of a sandbox
 * ({@link DryRunner}).
 */
final class ProcboxBackend implements SandboxBackend {

    static final String NAME = "procbox";

    private static final System.Logger LOG = System.getLogger(ProcboxBackend.class.getName());

    private static final List<String> UTIL_LINUX_TOOLS =
            List.of(SandboxCommands.SETSID, SandboxCommands.NSENTER, SandboxCommands.SETPRIV);
    private static final Duration KILL_WAIT = Duration.ofSeconds(2);
    private static final Duration CGROUP_REMOVAL_WAIT = Duration.ofSeconds(2);

    private final ProcboxSettings settings;
    private final MemoryCgroups cgroups;
    private final SandboxCommands commands;
    private final SandboxLauncher launcher;
    private final DryRunner dryRunner;
    /** Why live workspaces are walked without a nosymfollow view, probed once; null until then. */
    private volatile Optional<String> walkDegradation;

    ProcboxBackend(ProcboxSettings settings) {
        this(settings, true);
    }

    /** @param overlayDryRuns false to dry-run on copies of the workspace even as root */
    ProcboxBackend(ProcboxSettings settings, boolean overlayDryRuns) {
        this.settings = settings;
        this.cgroups = MemoryCgroups.detect(settings.cgroupRoot());
        this.commands = new SandboxCommands(settings.bwrap(), HostRootLayout.bwrapArgs(Path.of("/")),
                ProcFs.noNewPrivileges());
        this.launcher = new SandboxLauncher(commands);
        this.dryRunner = new DryRunner(commands, overlayDryRuns);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Capabilities capabilities() {
        return new Capabilities(true, false, false, false, false, true, false, false, cgroups.supported());
    }

    /** Checked on every call, so installing bubblewrap makes the backend available without a restart. */
    @Override
    public Availability availability() {
        if (!Files.isExecutable(settings.bwrap())) {
            return Availability.no("bubblewrap is not installed"
                    + (settings.bwrap().equals(Path.of("/usr/bin/bwrap")) ? "" : " at " + settings.bwrap())
                    + ": apt-get install bubblewrap");
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
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        Integer limitMib = spec.memoryLimitMib();
        if (limitMib != null && limitMib <= 0) {
            throw ApiException.badRequest("memory_limit_mib must be positive");
        }
        if (limitMib != null && !cgroups.supported()) {
            throw ApiException.notImplemented("memory_limit_mib is not supported on this host: "
                    + cgroups.unsupportedReason());
        }
        boolean userNamespace = settings.userNamespace();
        int uid = userNamespace ? ProcFs.effectiveUid() : settings.uid();
        int gid = userNamespace ? ProcFs.effectiveGid() : settings.gid();
        Path workDir = prepareWorkspace(ProcboxInstance.workspaceDir(spec.dir()), uid, gid);
        Path cgroup = limitMib == null ? null : createCgroup(spec.id(), limitMib);
        try {
            InitProcess init = launcher.launch(spec.id(), spec.dir(), workDir, cgroup, uid, gid, userNamespace);
            return new ProcboxInstance(spec.id(), spec.dir(), new SandboxRecord(init, uid, gid, cgroup, userNamespace),
                    commands);
        } catch (RuntimeException e) {
            if (cgroup != null) {
                MemoryCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT);
            }
            throw e;
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

    private Path createCgroup(String sandboxId, int limitMib) {
        try {
            return cgroups.create(sandboxId, limitMib);
        } catch (IOException e) {
            throw ApiException.internal("cannot create the memory cgroup of sandbox " + sandboxId + ": " + e, e);
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
        try {
            discardDryRunLeftovers(spec, HostTools.withAccessOf(sandbox));
        } catch (ApiException e) {
            // the sandbox itself is fine; destroy tries again before its directory goes
            LOG.log(Level.WARNING, e.getMessage());
        }
        return new ProcboxInstance(spec.id(), spec.dir(), sandbox, commands);
    }

    /**
     * Kills the sandbox's init, which takes its whole PID namespace with it, then removes its
     * cgroup. Leaves {@code spec.dir()} to core, but not before any dry-run overlay mounted in it
     * is gone: core's recursive delete would walk into it.
     */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        SandboxRecord sandbox;
        try {
            sandbox = SandboxRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            // no recorded state: the daemon stopped before create returned
            launcher.killUnrecorded(spec.dir());
            cgroups.existing(spec.id()).ifPresent(cgroup -> MemoryCgroups.remove(cgroup, CGROUP_REMOVAL_WAIT));
            removeWalkView(spec);
            return;
        }
        // while the init lives, the leftovers can be removed with its access to the workspace
        discardDryRunLeftovers(spec, HostTools.withAccessOf(sandbox));
        removeWalkView(spec);
        sandbox.init().kill(KILL_WAIT);
        if (sandbox.cgroup() != null && !MemoryCgroups.remove(sandbox.cgroup(), CGROUP_REMOVAL_WAIT)) {
            throw ApiException.internal("the cgroup " + sandbox.cgroup() + " of sandbox " + spec.id()
                    + " still has processes", null);
        }
    }

    @Override
    public ScratchRun dryRun(SandboxInstance instance, ExecRequest request) {
        if (!(instance instanceof ProcboxInstance procbox)) {
            throw new IllegalArgumentException("not a procbox instance: " + instance.getClass().getName());
        }
        return dryRunner.run(procbox, request);
    }

    private static void removeWalkView(InstanceSpec spec) {
        try {
            WalkView.remove(spec.dir());
        } catch (IOException e) {
            throw ApiException.internal("cannot unmount the workspace view of sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
    }

    /** Ends, unmounts and removes what dry-runs interrupted by a crash of the daemon left behind. */
    private static void discardDryRunLeftovers(InstanceSpec spec, HostTools tools) {
        try {
            for (DryRunScratch leftover : DryRunScratch.leftovers(spec.dir())) {
                leftover.discard(tools);
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot discard what an interrupted dry-run left in sandbox " + spec.id()
                    + ": " + e.getMessage(), e);
        }
    }
}
