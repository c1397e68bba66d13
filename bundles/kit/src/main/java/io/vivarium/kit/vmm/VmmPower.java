package io.vivarium.kit.vmm;

import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Stop and start of a VMM backend's guests: a stop asks the guest to shut down through the VMM's
 * API ({@link VmmDriver#shutdown}), then ends the VMM, keeping the workspace disk; a start boots the
 * guest again from it, as a create does. The backend bundle registers a component that extends it as
 * the backend's {@link PowerControl}.
 */
public abstract class VmmPower implements PowerControl {

    private final VmmRuntime runtime;

    protected VmmPower(VmmRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public SandboxInstance stop(SandboxInstance instance, OperationContext context) {
        VmmInstance running = runtime.instances().own(instance);
        VmmInstance stopped = runtime.launcher().stop(running, context);
        return runtime.instances().put(stopped);
    }

    @Override
    public SandboxInstance start(SandboxInstance instance, OperationContext context) {
        VmmInstance stopped = runtime.instances().own(instance);
        return runtime.instances().put(runtime.launcher().startAgain(stopped, context));
    }
}
