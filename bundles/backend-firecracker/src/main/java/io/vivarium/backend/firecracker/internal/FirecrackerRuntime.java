package io.vivarium.backend.firecracker.internal;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;
import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmHostProbe;
import io.vivarium.kit.vmm.VmmInstance;
import io.vivarium.kit.vmm.VmmLauncher;
import io.vivarium.kit.vmm.VmmSettings;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of the Firecracker backend: its settings, the host probe, the launcher (the kit's,
 * with {@link FirecrackerDriver}) and the microVMs it created or adopted. A private service of this
 * bundle. MicroVMs outlive it: deactivation only lets go of this revision's connections to their
 * agents, and the next revision adopts them.
 */
@Component(service = FirecrackerRuntime.class, configurationPid = FirecrackerConfig.PID)
@Designate(ocd = FirecrackerConfig.class)
public class FirecrackerRuntime {

    private static final System.Logger LOG = System.getLogger(FirecrackerRuntime.class.getName());
    private static final String INSTALL = "(Firecracker is in no Debian release): install a release binary from "
            + "https://github.com/firecracker-microvm/firecracker/releases there, or set firecracker_path (PID "
            + FirecrackerConfig.PID + ")";

    private final VmmHostProbe probe;
    private final VmmLauncher launcher;
    private final InstanceTable<VmmInstance> instances = new InstanceTable<>(VmmInstance.class, FirecrackerBackend.NAME);

    @Activate
    public FirecrackerRuntime(FirecrackerConfig config, BundleContext context) {
        this(settings(config), HostKvm.check(), agentDir(context));
    }

    /** @param agentDir where to write the kit's agent binary, whose launch mode starts each VMM detached */
    FirecrackerRuntime(VmmSettings settings, HostKvm kvm, Path agentDir) {
        Path agent = null;
        String problem = null;
        try {
            agent = AgentBinary.install(agentDir);
        } catch (IOException | RuntimeException e) {
            // activate anyway: the backend is then unavailable, saying why
            problem = "cannot write the agent binary that starts each Firecracker to " + agentDir + ": " + e.getMessage();
            LOG.log(System.Logger.Level.ERROR, problem, e);
        }
        this.probe = new VmmHostProbe(settings, "Firecracker", kvm, INSTALL, problem);
        this.launcher = new VmmLauncher(settings, new FirecrackerDriver(), agent);
    }

    static VmmSettings settings(FirecrackerConfig config) {
        return new VmmSettings(Path.of(config.firecracker__path()), VmmSettings.imageDir(config.image__dir()),
                config.default__image(), config.default__memory__mib(), config.default__vcpus(), config.workspace__mib(),
                Duration.ofSeconds(config.boot__timeout__secs()),
                Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker"));
    }

    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data != null ? data.toPath() : Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker-agent");
    }

    VmmHostProbe probe() {
        return probe;
    }

    /** The backend's details: the probe's, and the API document it is written and contract-tested against. */
    Map<String, String> details() {
        return probe.details(Map.of("api", "Firecracker API " + FirecrackerApi.TARGET
                + " (the document this backend is written and contract-tested against)"));
    }

    VmmLauncher launcher() {
        return launcher;
    }

    InstanceTable<VmmInstance> instances() {
        return instances;
    }

    /** Lets go of every microVM of this revision; they keep running. */
    @Deactivate
    void close() {
        instances.letGoOfAll();
    }
}
