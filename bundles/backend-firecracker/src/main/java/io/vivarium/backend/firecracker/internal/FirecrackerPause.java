package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmPause;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The firecracker backend's pause and resume: the kit's {@link VmmPause} on {@link FirecrackerRuntime}. */
@Component(service = PauseControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + FirecrackerBackend.NAME)
public class FirecrackerPause extends VmmPause {

    @Activate
    public FirecrackerPause(@Reference FirecrackerRuntime runtime) {
        super(runtime.vmm());
    }
}
