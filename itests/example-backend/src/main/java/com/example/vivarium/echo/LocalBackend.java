package com.example.vivarium.echo;

import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * <b>An example for plugin authors, not for production.</b> A sandbox here is Vivarium's guest agent
 * run as a plain host process of the daemon's user, detached from the daemon, in a workspace
 * directory ({@code spec.dir()/work}): there is no isolation of any kind (no namespaces, no separate
 * user, no limits), which its availability says. It shows the shape of a real backend built on the
 * API and the vendor kit: the lifecycle here, the instance table and the agent binary in
 * {@link LocalRuntime}, the start in {@link LocalLauncher}, the kit's guest channel, images as a
 * seam of their own ({@link LocalImages}), and adoption by the agent's pid and start time.
 *
 * <p>It reports {@code exec}, and {@code eval} where the host has a {@code python3} for the agent's
 * warm interpreter; core derives snapshot, branch and fork from the images seam.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + LocalBackend.NAME,
        // DS registers the backend after its seams, so core never sees it without them (and on a stop it goes first)
        reference = @Reference(name = "images", service = Images.class,
                target = "(" + SandboxBackend.NAME_PROPERTY + "=" + LocalBackend.NAME + ")"))
public final class LocalBackend implements SandboxBackend {

    static final String NAME = "example-local";

    private final LocalRuntime runtime;

    @Activate
    public LocalBackend(@Reference LocalRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<String> capabilities() {
        return runtime.probe().python().isPresent() ? Set.of(Capability.EXEC, Capability.EVAL) : Set.of(Capability.EXEC);
    }

    @Override
    public Availability availability() {
        return runtime.probe().availability();
    }

    @Override
    public Map<String, String> details() {
        return runtime.probe().details();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        if (spec.memoryLimitMib() != null || spec.pidsLimit() != null || spec.diskLimitMib() != null) {
            // core sends none of them, since none is reported; a backend never ignores a limit it is given
            throw ApiException.notImplemented("example-local enforces no limits");
        }
        try {
            Files.createDirectories(LocalLauncher.work(spec.dir()));
        } catch (IOException e) {
            throw ApiException.internal("cannot create the workspace of sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
        return runtime.instances().put(runtime.launcher().start(spec, context));
    }

    /** The agent the state records, if that very process still runs: a pid that went to another process is not it. */
    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        HostProcess agent = LocalInstance.agentOf(state).orElseThrow(() -> new InstanceGoneException(
                "its record names no agent (pid and start time): made by an example-local without one"));
        if (!agent.isRunning()) {
            throw new InstanceGoneException("its agent (pid " + agent.pid() + ") is gone"
                    + (HostProcess.find(agent.pid()).isPresent() ? "; that pid is another process now" : ""));
        }
        return runtime.instances().put(runtime.launcher().attach(spec, agent));
    }

    /** Ends the agent and everything below it ({@link LocalLauncher#end}); the directory is core's. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        runtime.instances().remove(spec.id());
        runtime.launcher().end(spec, state);
    }
}
