package com.example.vivarium.echo;

import java.io.File;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;

/**
 * One revision of example-local's shared state, which the backend and its images seam are handed:
 * the agent binary (the kit's, written to this bundle's data area), the host probe, the launcher
 * and the table of the sandboxes this revision created or adopted. A DS component registered as a
 * private service of its own class. It has no configuration; a backend with settings takes them
 * here ({@code configurationPid} and {@code @Designate}).
 *
 * <p>Sandboxes outlive it: deactivation (a bundle update, a daemon stopping) only lets go of this
 * revision's connections to their agents, never kills them, and the next revision adopts them.
 * Running agents hold the binary file they were started from, so writing it again is harmless.
 */
@Component(service = LocalRuntime.class)
public final class LocalRuntime {

    private static final System.Logger LOG = System.getLogger(LocalRuntime.class.getName());

    private final LocalHostProbe probe;
    private final LocalLauncher launcher;
    private final InstanceTable<LocalInstance> instances = new InstanceTable<>(LocalInstance.class, LocalBackend.NAME);

    @Activate
    public LocalRuntime(BundleContext context) {
        this(agentDir(context));
    }

    /** @param agentDir where to write the agent binary */
    LocalRuntime(Path agentDir) {
        Path binary = null;
        String problem = null;
        try {
            binary = AgentBinary.install(agentDir);
        } catch (IOException | RuntimeException e) {
            // activate anyway: the backend is then unavailable, saying why
            problem = "cannot write the guest agent binary to " + agentDir + ": " + e.getMessage();
            LOG.log(Level.ERROR, problem, e);
        }
        this.probe = new LocalHostProbe(binary, problem);
        this.launcher = new LocalLauncher(binary);
    }

    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data != null ? data.toPath() : Path.of(System.getProperty("java.io.tmpdir"), "example-local-agent");
    }

    LocalHostProbe probe() {
        return probe;
    }

    LocalLauncher launcher() {
        return launcher;
    }

    InstanceTable<LocalInstance> instances() {
        return instances;
    }

    /** Lets go of every sandbox of this revision; they keep running. */
    @Deactivate
    void close() {
        instances.letGoOfAll();
    }
}
