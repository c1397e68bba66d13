package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmPower;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The cloud-hypervisor backend's stop and start: the kit's {@link VmmPower} on {@link CloudHypervisorRuntime}. */
@Component(service = PowerControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + CloudHypervisorBackend.NAME)
public class CloudHypervisorPower extends VmmPower {

    @Activate
    public CloudHypervisorPower(@Reference CloudHypervisorRuntime runtime) {
        super(runtime.vmm());
    }
}
