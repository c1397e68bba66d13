package io.vivarium.backend.firecracker.internal;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;
import io.vivarium.kit.vmm.HostKvm;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of the Firecracker backend: its settings, the host probe, the launcher and the
 * microVMs it created or adopted. A private service of this bundle. MicroVMs outlive it:
 * deactivation only lets go of this revision's connections to their agents, and the next revision
 * adopts them.
 */
@Component(service = FirecrackerRuntime.class, configurationPid = FirecrackerConfig.PID)
@Designate(ocd = FirecrackerConfig.class)
public class FirecrackerRuntime {

    private static final System.Logger LOG = System.getLogger(FirecrackerRuntime.class.getName());

    private final FirecrackerHostProbe probe;
    private final FirecrackerLauncher launcher;
    private final InstanceTable<FirecrackerInstance> instances =
            new InstanceTable<>(FirecrackerInstance.class, FirecrackerBackend.NAME);

    @Activate
    public FirecrackerRuntime(FirecrackerConfig config, BundleContext context) {
        this(FirecrackerSettings.from(config), HostKvm.check(), agentDir(context));
    }

    /** @param agentDir where to write the kit's agent binary, whose launch mode starts each VMM detached */
    FirecrackerRuntime(FirecrackerSettings settings, HostKvm kvm, Path agentDir) {
        Path agent = null;
        String problem = null;
        try {
            agent = AgentBinary.install(agentDir);
        } catch (IOException | RuntimeException e) {
            // activate anyway: the backend is then unavailable, saying why
            problem = "cannot write the agent binary that starts each Firecracker to " + agentDir + ": " + e.getMessage();
            LOG.log(System.Logger.Level.ERROR, problem, e);
        }
        this.probe = new FirecrackerHostProbe(settings, kvm, problem);
        this.launcher = new FirecrackerLauncher(settings, agent);
    }

    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data != null ? data.toPath() : Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker-agent");
    }

    FirecrackerHostProbe probe() {
        return probe;
    }

    FirecrackerLauncher launcher() {
        return launcher;
    }

    InstanceTable<FirecrackerInstance> instances() {
        return instances;
    }

    /** Lets go of every microVM of this revision; they keep running. */
    @Deactivate
    void close() {
        instances.letGoOfAll();
    }
}
