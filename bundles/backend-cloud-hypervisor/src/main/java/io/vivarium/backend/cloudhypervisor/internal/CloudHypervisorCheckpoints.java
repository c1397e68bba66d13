package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmCheckpoints;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The cloud-hypervisor backend's checkpoints (of its VMs): the kit's {@link VmmCheckpoints} on {@link CloudHypervisorRuntime}. */
@Component(service = Checkpoints.class, property = SandboxBackend.NAME_PROPERTY + "=" + CloudHypervisorBackend.NAME)
public class CloudHypervisorCheckpoints extends VmmCheckpoints {

    @Activate
    public CloudHypervisorCheckpoints(@Reference CloudHypervisorRuntime runtime) {
        super(runtime.vmm());
    }
}
