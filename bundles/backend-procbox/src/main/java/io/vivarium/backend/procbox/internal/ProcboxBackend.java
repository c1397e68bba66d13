package io.vivarium.backend.procbox.internal;

import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRuns;
import io.vivarium.api.spi.StorageStrategies;

import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Process sandboxes: a bubblewrap process tree per sandbox, in its own PID, mount, network, IPC,
 * UTS and cgroup namespaces, with the host's /usr and /etc read-only and a private workspace at
 * {@code /work}. The sandbox's keep-alive is the guest agent, which the daemon reaches on its Unix
 * socket ({@link AgentChannel}). Sandboxes are detached from the daemon and outlive it; they are
 * found again by the pid and start time of their init. Their images are {@link ProcboxImages}, their
 * dry-runs {@link ProcboxScratchRuns}; they cannot be paused and have no checkpoints.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME,
        // DS registers the backend after its seams, so core never sees it without them (and on a stop it goes first)
        reference = {
                @Reference(name = "images", service = Images.class, target = ProcboxBackend.SEAM_TARGET),
                @Reference(name = "scratchRuns", service = ScratchRuns.class, target = ProcboxBackend.SEAM_TARGET) })
public final class ProcboxBackend implements SandboxBackend {

    static final String NAME = "procbox";
    /** The filter that finds a seam this bundle registers under procbox's name. */
    static final String SEAM_TARGET = "(" + SandboxBackend.NAME_PROPERTY + "=" + NAME + ")";

    private static final System.Logger LOG = System.getLogger(ProcboxBackend.class.getName());

    private final ProcboxRuntime runtime;

    @Activate
    public ProcboxBackend(@Reference ProcboxRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String name() {
        return NAME;
    }

    /** exec and eval through the agent, volumes as binds, a template's root image, and each limit where this host can enforce it. */
    @Override
    public Set<String> capabilities() {
        ProcboxHostProbe probe = runtime.probe();
        Set<String> reported = new HashSet<>(Set.of(Capability.EXEC, Capability.EVAL));
        if (ProcFs.effectiveUid() == 0) {
            reported.add(Capability.VOLUMES); // core loop-mounts them: only a root daemon can
            reported.add(Capability.ROOT_IMAGE); // run as the image's user: only a root daemon can
        }
        if (probe.memoryCgroups().supported()) {
            reported.add(Capability.MEMORY_LIMIT);
        }
        if (probe.pidsCgroups().supported()) {
            reported.add(Capability.PIDS_LIMIT);
        }
        if (probe.workspaces().supported()) {
            reported.add(Capability.DISK_LIMIT);
        }
        if (SandboxNetworks.unsupportedReason() == null) {
            reported.add(Capability.NETWORK_EGRESS);
        }
        return Set.copyOf(reported);
    }

    @Override
    public Availability availability() {
        return runtime.probe().availability();
    }

    @Override
    public Map<String, String> details() {
        return runtime.probe().details(runtime.pool().describe());
    }

    /** A create of the default spec takes a sandbox of the pool when one is ready. */
    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        context.checkpoint("starting sandbox " + spec.id());
        return runtime.instances().put(runtime.start(spec, null));
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        ProcboxRecord sandbox;
        try {
            sandbox = ProcboxRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        if (!sandbox.init().isRunningOn()) {
            throw new InstanceGoneException("init process " + sandbox.init().pid() + " is gone");
        }
        Path home = ProcboxInstance.home(spec.dir());
        try {
            DryRunScratch.discardLeftovers(spec.id(), home, HostTools.withAccessOf(sandbox));
        } catch (ApiException e) {
            // the sandbox itself is fine; destroy tries again before its directory goes
            LOG.log(Level.WARNING, e.getMessage());
        }
        return runtime.instances().put(new ProcboxInstance(spec.id(), home, sandbox, channel(spec.id(), sandbox),
                spec.volumes()));
    }

    /** The same agent on its recorded socket; nsenter into a sandbox made before procbox had an agent. */
    private GuestChannel channel(String sandboxId, ProcboxRecord sandbox) {
        if (sandbox.agentSocket() == null) {
            return new NsenterChannel(sandboxId, sandbox, runtime.commands());
        }
        Path socket = AgentChannel.socket(sandbox.init(), sandbox.agentSocket());
        return new AgentChannel(sandboxId, sandbox.init(), socket, AgentChannel.client(sandbox.init(), socket));
    }

    /** Ends the sandbox and what its start made ({@link ProcboxLauncher#end}); its directory is core's. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        runtime.instances().remove(spec.id());
        try {
            if (spec.network().egress()) {
                runtime.networks().detach(spec.id());
            }
        } finally {
            runtime.launcher().end(spec, state); // the sandbox ends whatever became of its network
        }
    }
}
