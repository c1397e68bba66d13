package io.vivarium.kit.vmm;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Pause and resume of a VMM backend's guests, through the VMM's API ({@link VmmDriver#pause}): the
 * VMM keeps the state, so a daemon that adopts a paused guest finds it paused. The backend bundle
 * registers a component that extends it as the backend's {@link PauseControl}.
 */
public abstract class VmmPause implements PauseControl {

    private final VmmRuntime runtime;

    protected VmmPause(VmmRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public void pause(SandboxInstance instance) {
        runtime.launcher().pause(runtime.instances().own(instance));
    }

    @Override
    public void resume(SandboxInstance instance) {
        runtime.launcher().resume(runtime.instances().own(instance));
    }
}
