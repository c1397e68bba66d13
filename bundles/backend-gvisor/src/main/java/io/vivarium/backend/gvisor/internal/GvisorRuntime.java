package io.vivarium.backend.gvisor.internal;

import io.vivarium.common.bundles.BundleClasses;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.kit.backend.InstanceTable;

import java.io.File;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of the gVisor backend's shared state, which the backend and its seams are built
 * on: the settings from its configuration, runsc, the host probe, the launcher, the checkpoint
 * engine and the table of the containers this revision created or adopted. Registered as a
 * private service of its own class. Containers outlive it: deactivation only lets go of them
 * (their agent connections close), and the next revision adopts them. The agent binary is
 * written to the bundle's data area; running containers hold the file they started with.
 */
@Component(service = GvisorRuntime.class, configurationPid = GvisorConfig.PID)
@Designate(ocd = GvisorConfig.class)
public final class GvisorRuntime implements AutoCloseable {

    /** The part of the sandboxes' address pool gVisor hands out (procbox takes the first half, QEMU the last quarter). */
    static final String NETWORK_BLOCKS = "10.213.128.0/18";

    private final GvisorSettings settings;
    private final SandboxNetworks networks;
    private final Runsc runsc;
    private final GvisorHostProbe probe;
    private final InstanceTable<GvisorInstance> instances = new InstanceTable<>(GvisorInstance.class,
            GvisorBackend.NAME);
    private final GvisorLauncher launcher;
    private final ContainerCheckpointer checkpointer;
    private final RetiredContainers retired;

    @Activate
    public GvisorRuntime(GvisorConfig config, BundleContext context) {
        this(settings(config, context));
        networks.removeOrphansWhereSupported();
    }

    GvisorRuntime(GvisorSettings settings) {
        this.settings = settings;
        this.runsc = new Runsc(settings.runsc());
        this.probe = new GvisorHostProbe(settings, runsc);
        this.networks = new SandboxNetworks(settings.agentDir().resolveSibling(settings.agentDir().getFileName() + "-network"),
                NETWORK_BLOCKS);
        this.launcher = new GvisorLauncher(settings, runsc, instances, networks);
        this.retired = new RetiredContainers(launcher);
        this.checkpointer = new ContainerCheckpointer(settings, runsc, probe, launcher, retired);
    }

    private static GvisorSettings settings(GvisorConfig config, BundleContext context) {
        BundleClasses.loadAll(context.getBundle());
        File data = context.getDataFile("agent");
        return GvisorSettings.from(config, data == null ? GvisorSettings.defaultAgentDir() : data.toPath());
    }

    GvisorSettings settings() {
        return settings;
    }

    Runsc runsc() {
        return runsc;
    }

    GvisorHostProbe probe() {
        return probe;
    }

    GvisorLauncher launcher() {
        return launcher;
    }

    ContainerCheckpointer checkpointer() {
        return checkpointer;
    }

    RetiredContainers retired() {
        return retired;
    }

    InstanceTable<GvisorInstance> instances() {
        return instances;
    }

    /**
     * Lets go of every container; they keep running for the next revision or daemon to adopt.
     * Waits for the deletions of replaced containers already running.
     */
    @Deactivate
    @Override
    public void close() {
        instances.letGoOfAll();
        retired.close();
    }
}
