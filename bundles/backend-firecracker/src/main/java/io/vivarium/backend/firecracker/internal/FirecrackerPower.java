package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmPower;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The firecracker backend's stop and start: the kit's {@link VmmPower} on {@link FirecrackerRuntime}. */
@Component(service = PowerControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + FirecrackerBackend.NAME)
public class FirecrackerPower extends VmmPower {

    @Activate
    public FirecrackerPower(@Reference FirecrackerRuntime runtime) {
        super(runtime.vmm());
    }
}
