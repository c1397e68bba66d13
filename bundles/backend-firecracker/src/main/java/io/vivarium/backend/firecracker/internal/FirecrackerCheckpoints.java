package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmCheckpoints;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The firecracker backend's checkpoints (and so its dry-runs): the kit's {@link VmmCheckpoints} on {@link FirecrackerRuntime}. */
@Component(service = Checkpoints.class, property = SandboxBackend.NAME_PROPERTY + "=" + FirecrackerBackend.NAME)
public class FirecrackerCheckpoints extends VmmCheckpoints {

    @Activate
    public FirecrackerCheckpoints(@Reference FirecrackerRuntime runtime) {
        super(runtime.vmm());
    }
}
