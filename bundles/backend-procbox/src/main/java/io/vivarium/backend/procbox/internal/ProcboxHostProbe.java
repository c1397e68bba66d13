package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;

import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What this host offers process sandboxes: bubblewrap, the agent binary, util-linux's tools, the
 * memory and pids cgroups, loop-mounted workspaces and the walk view; the backend's availability
 * and details, and the host facts its launches go by.
 */
final class ProcboxHostProbe {

    private static final System.Logger LOG = System.getLogger(ProcboxHostProbe.class.getName());

    private static final List<String> UTIL_LINUX_TOOLS =
            List.of(SandboxCommands.SETSID, SandboxCommands.NSENTER, SandboxCommands.SETPRIV);

    private final ProcboxSettings settings;
    private final LimitCgroups memoryCgroups;
    private final LimitCgroups pidsCgroups;
    private final Freezer freezer;
    private final WorkspaceImages workspaces;
    private final Supplier<String> bwrapVersion;
    /** The host's agent binary, or null if it could not be written ({@link #agentProblem} says why). */
    private final Path agentBinary;
    private final String agentProblem;
    /** Why live workspaces are walked without a nosymfollow view, probed once; null until then. */
    private volatile Optional<String> walkDegradation;

    /**
     * Detects the cgroups and what workspace images need, and opens the pool of ready workspace
     * images where they are supported; never fails.
     *
     * @param agentBinary the agent binary written for the sandboxes, or null with {@code agentProblem}
     */
    ProcboxHostProbe(ProcboxSettings settings, Path agentBinary, String agentProblem) {
        this.settings = settings;
        this.memoryCgroups = LimitCgroups.detect(settings.cgroupRoot(), LimitCgroups.Controller.MEMORY);
        this.pidsCgroups = LimitCgroups.detect(settings.cgroupRoot(), LimitCgroups.Controller.PIDS);
        this.freezer = Freezer.detect(settings.cgroupRoot());
        this.workspaces = WorkspaceImages.detect(settings.templateDir(), ProcFs.effectiveUid() == 0,
                settings.workspacePoolSize());
        this.bwrapVersion = new BwrapVersion(settings.bwrap());
        this.agentBinary = agentBinary;
        this.agentProblem = agentProblem;
    }

    LimitCgroups memoryCgroups() {
        return memoryCgroups;
    }

    LimitCgroups pidsCgroups() {
        return pidsCgroups;
    }

    Freezer freezer() {
        return freezer;
    }

    WorkspaceImages workspaces() {
        return workspaces;
    }

    /** The agent binary every sandbox runs; null if it could not be written, which {@link #availability} says. */
    Path agentBinary() {
        return agentBinary;
    }

    /** Checked on every call, so installing bubblewrap makes the backend available without a restart. */
    Availability availability() {
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

    /** Whether the daemon can give its walks a view that follows no symlink ({@link WalkView}). */
    boolean walkViews() {
        return walkDegradation().isEmpty();
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

    /**
     * How sandboxes are isolated and entered here; the bubblewrap version is asked once.
     *
     * @param sandboxPool how the pool of sandboxes launched ahead serves ({@link ProcboxSandboxPool#describe})
     */
    Map<String, String> details(String sandboxPool) {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_ISOLATION, bwrapVersion.get());
        d.put(SandboxBackend.DETAIL_AGENT, SandboxCommands.AGENT_NAME);
        d.put("memory_cgroup", memoryCgroups.describe());
        d.put("pids_cgroup", pidsCgroups.describe());
        d.put("workspace", workspaces.describe());
        d.put("sandbox_pool", sandboxPool);
        d.put("images", ProcboxImages.DESCRIPTION);
        d.put("sandbox_user", settings.userNamespace() ? "the daemon's uid " + ProcFs.effectiveUid()
                + " in a user namespace (the daemon is not root)" : "uid " + settings.uid() + ", gid " + settings.gid());
        return d;
    }
}
