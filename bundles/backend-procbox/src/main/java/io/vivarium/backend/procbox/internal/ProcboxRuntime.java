package io.vivarium.backend.procbox.internal;

import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.common.bundles.BundleClasses;
import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;

import java.io.File;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of procbox's shared state, which the backend and its seams are handed: the settings
 * from its configuration, the host probe, the launcher with its pools, and the table of the
 * sandboxes this revision created or adopted. Sandboxes outlive it, and the next revision adopts
 * them: deactivation only lets go of this revision's idle connections to their agents and discards
 * its pools, behind it unless the daemon is stopping (the next revision does not wait for that). The
 * agent binary is written to the bundle's data area, which a bundle update keeps and a daemon
 * restart (which cleans felix-cache) loses: either way it is written again at activation, and
 * running sandboxes hold the file they were started with ({@link AgentBinary}).
 */
@Component(service = ProcboxRuntime.class, configurationPid = ProcboxConfig.PID)
@Designate(ocd = ProcboxConfig.class)
public final class ProcboxRuntime implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(ProcboxRuntime.class.getName());

    private final ProcboxHostProbe probe;
    private final SandboxCommands commands;
    private final ProcboxLauncher launcher;
    private final InstanceTable<ProcboxInstance> instances =
            new InstanceTable<>(ProcboxInstance.class, ProcboxBackend.NAME);
    /** The part of the sandboxes' address pool procbox hands out (gVisor and QEMU share the other half). */
    static final String NETWORK_BLOCKS = "10.213.0.0/17";
    private final SandboxNetworks networks;
    private final boolean overlayDryRuns;
    /** Null outside a framework. */
    private final BundleClasses classes;

    @Activate
    public ProcboxRuntime(ProcboxConfig config, BundleContext context) {
        this(BundleClasses.loadInBackground(context.getBundle()), ProcboxSettings.from(config, agentDir(context)), true,
                null);
        // where core keeps its state unless its own configuration says otherwise; a create tells for sure
        String stateDir = context.getProperty("vivarium.state.dir");
        removeAbandonedPools(Path.of(stateDir == null || stateDir.isEmpty() ? "var" : stateDir));
    }

    ProcboxRuntime(ProcboxSettings settings) {
        this(settings, true);
    }

    /** @param overlayDryRuns false to dry-run on copies of the workspace even as root */
    ProcboxRuntime(ProcboxSettings settings, boolean overlayDryRuns) {
        this(settings, overlayDryRuns, null);
    }

    /**
     * @param sandboxPoolName the name of the sandbox pool's directory ({@link DaemonOwnedDirs}), or
     *        null for one owned by this process
     */
    ProcboxRuntime(ProcboxSettings settings, boolean overlayDryRuns, String sandboxPoolName) {
        this(null, settings, overlayDryRuns, sandboxPoolName);
    }

    private ProcboxRuntime(BundleClasses classes, ProcboxSettings settings, boolean overlayDryRuns,
            String sandboxPoolName) {
        this.classes = classes;
        this.overlayDryRuns = overlayDryRuns;
        Path binary = null;
        String problem = null;
        try {
            binary = AgentBinary.install(settings.agentDir());
        } catch (IOException | RuntimeException e) {
            problem = "cannot write the guest agent binary to " + settings.agentDir() + ": " + e.getMessage();
            LOG.log(Level.ERROR, problem, e);
        }
        this.probe = new ProcboxHostProbe(settings, binary, problem);
        this.networks = new SandboxNetworks(settings.agentDir().resolveSibling(settings.agentDir().getFileName() + "-network"),
                NETWORK_BLOCKS);
        this.commands = new SandboxCommands(settings.bwrap(), HostRootLayout.bwrapArgs(Path.of("/")),
                ProcFs.noNewPrivileges(), binary, networks.resolvConf());
        this.launcher = new ProcboxLauncher(settings, probe, commands, sandboxPoolName);
    }

    /** The bundle's own data area for the agent binary, or the JVM's temporary directory without one. */
    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data == null ? ProcboxSettings.defaultAgentDir() : data.toPath();
    }

    ProcboxHostProbe probe() {
        return probe;
    }

    /** Starts a sandbox ({@link ProcboxLauncher#start}) and gives it its network; one whose network fails is ended. */
    ProcboxInstance start(InstanceSpec spec, Path copiedImage) {
        ProcboxInstance started = launcher.start(spec, copiedImage);
        if (spec.network().egress()) {
            try {
                networks.attach(spec.id(), SandboxNetworks.Namespace.ofProcess(started.sandbox().init().pid()), spec.network(),
                        spec.resolver());
            } catch (RuntimeException e) {
                launcher.end(spec, started.state());
                throw e;
            }
        }
        return started;
    }

    SandboxNetworks networks() {
        return networks;
    }

    SandboxCommands commands() {
        return commands;
    }

    ProcboxLauncher launcher() {
        return launcher;
    }

    /** The pool of sandboxes of the default spec launched ahead. */
    ProcboxSandboxPool pool() {
        return launcher.pool();
    }

    /** The sandboxes this revision created or adopted. */
    InstanceTable<ProcboxInstance> instances() {
        return instances;
    }

    /** Whether dry-runs mount an overlay on the workspace where they can (else they copy it). */
    boolean overlayDryRuns() {
        return overlayDryRuns;
    }

    /**
     * Discards the pooled sandboxes a daemon that no longer runs left in {@code stateDir} (killed
     * with -9): at activation, before any create tells where the sandboxes live.
     */
    void removeAbandonedPools(Path stateDir) {
        launcher.pool().removeAbandoned(stateDir);
        networks.removeOrphansWhereSupported();
    }

    @Deactivate
    void deactivate(BundleContext context) {
        if (context.getBundle(Constants.SYSTEM_BUNDLE_ID).getState() == Bundle.STOPPING) {
            // the daemon is stopping: no pooled sandbox outlives it
            close();
        } else {
            // an update (or a stop of this bundle alone): core's requests wait for the next revision, not for the pools
            closeInBackground();
        }
        if (classes != null) {
            classes.await();
        }
    }

    /**
     * Discards the pooled sandboxes, lets go of every sandbox (drops the idle connections to its
     * agent) and the pool of ready workspace images; the sandboxes run on.
     */
    @Override
    public void close() {
        launcher.close();
        instances.letGoOfAll();
        probe.workspaces().close();
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
}
