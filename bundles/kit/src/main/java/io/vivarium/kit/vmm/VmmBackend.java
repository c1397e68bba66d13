package io.vivarium.kit.vmm;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import java.util.Map;
import java.util.Set;

/**
 * A backend of VMM guests on a {@link VmmRuntime}: machines with commands, guest memory
 * ({@code memory_limit_mib}), the workspace disk's size ({@code disk_limit_mib}) and a choice of
 * image; create, adopt (the VMM by pid and start time, or a guest stopped on purpose) and destroy.
 * No forkable snapshots, so core offers none of what derives from them. The backend bundle's component
 * extends it with its name, and registers {@link VmmPause} and {@link VmmPower} beside it, and {@link
 * VmmCheckpoints} where the VMM saves a guest's state.
 */
public abstract class VmmBackend implements SandboxBackend {

    private final VmmRuntime runtime;

    protected VmmBackend(VmmRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public Set<String> capabilities() {
        return Set.of(Capability.EXEC, Capability.MEMORY_LIMIT, Capability.DISK_LIMIT, Capability.IMAGE);
    }

    @Override
    public boolean machine() {
        return true;
    }

    @Override
    public Availability availability() {
        return runtime.probe().availability();
    }

    @Override
    public Map<String, String> details() {
        return runtime.details();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        if (spec.pidsLimit() != null) {
            throw ApiException.notImplemented("pids_limit is not supported by " + name() + ": a guest's processes are "
                    + "bounded by its memory_limit_mib; omit it");
        }
        return runtime.instances().put(runtime.launcher().start(spec, context));
    }

    /**
     * The VMM the state records, if that very process still runs (a pid that went to another process
     * is not it), else the one its pid file names if that serves this sandbox (a restore relaunched
     * it, and the daemon died before core recorded it); or the guest stopped on purpose, as stopped.
     */
    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        if (VmmInstance.stopped(state)) {
            return runtime.instances().put(runtime.launcher().stopped(spec));
        }
        VmmProcess recorded = VmmInstance.processOf(state).orElseThrow(() -> new InstanceGoneException(
                "its record names no VMM process (pid and start time)"));
        VmmProcess vmm = recorded.isRunning() ? recorded : runtime.launcher().launchedFor(spec)
                .orElseThrow(() -> new InstanceGoneException("its VMM process (pid " + recorded.pid() + ") is gone"));
        return runtime.instances().put(runtime.launcher().attach(spec, vmm));
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        runtime.instances().remove(spec.id()).ifPresent(VmmInstance::close);
        runtime.launcher().end(spec, state);
    }
}
