package io.vivarium.kit.vmm;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One revision of a VMM backend's shared state: the host probe, the launcher with the VMM's
 * driver, and the guests this revision created or adopted. The backend bundle's runtime component
 * makes one at activation and {@link #close closes} it at deactivation, which only lets go of this
 * revision's connections: the guests run on, and the next revision adopts them.
 */
public final class VmmRuntime {

    private static final System.Logger LOG = System.getLogger(VmmRuntime.class.getName());

    private final VmmHostProbe probe;
    private final VmmLauncher launcher;
    private final Map<String, String> details;
    private final InstanceTable<VmmInstance> instances;

    /**
     * @param backend the backend's name ({@link io.vivarium.api.spi.SandboxBackend#name()})
     * @param agentDir where to write the kit's agent binary, whose launch mode starts each VMM detached
     * @param installHint how to get the VMM's executable ({@link VmmHostProbe})
     * @param details the backend's own details, after the probe's (the API document it is held to)
     */
    public VmmRuntime(String backend, VmmSettings settings, VmmDriver driver, HostKvm kvm, Path agentDir,
            String installHint, Map<String, String> details) {
        Path agent = null;
        String problem = null;
        try {
            agent = AgentBinary.install(agentDir);
        } catch (IOException | RuntimeException e) {
            // activate anyway: the backend is then unavailable, saying why
            problem = "cannot write the agent binary that starts each " + driver.name() + " to " + agentDir + ": "
                    + e.getMessage();
            LOG.log(System.Logger.Level.ERROR, problem, e);
        }
        this.probe = new VmmHostProbe(settings, driver.name(), kvm, installHint, problem);
        this.launcher = new VmmLauncher(settings, driver, agent);
        this.details = new LinkedHashMap<>(details);
        this.instances = new InstanceTable<>(VmmInstance.class, backend);
    }

    public VmmHostProbe probe() {
        return probe;
    }

    public VmmLauncher launcher() {
        return launcher;
    }

    /** The probe's details, then the backend's own. */
    public Map<String, String> details() {
        return probe.details(details);
    }

    public InstanceTable<VmmInstance> instances() {
        return instances;
    }

    /** Lets go of every guest of this revision; they keep running. */
    public void close() {
        instances.letGoOfAll();
    }
}
