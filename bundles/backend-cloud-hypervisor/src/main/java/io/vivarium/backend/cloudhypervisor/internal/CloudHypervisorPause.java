package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmPause;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The cloud-hypervisor backend's pause and resume: the kit's {@link VmmPause} on {@link CloudHypervisorRuntime}. */
@Component(service = PauseControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + CloudHypervisorBackend.NAME)
public class CloudHypervisorPause extends VmmPause {

    @Activate
    public CloudHypervisorPause(@Reference CloudHypervisorRuntime runtime) {
        super(runtime.vmm());
    }
}
