package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmBackend;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Plain virtual machines under Cloud Hypervisor: the kit's {@link VmmBackend} on {@link
 * CloudHypervisorRuntime}, created through {@code POST /v1/vms} alone (never a sandbox backend: a
 * {@code POST /v1/sandboxes} that names it is a 400 saying so).
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + CloudHypervisorBackend.NAME,
        // its seams, referenced so that DS registers the backend after them (and unregisters it first)
        reference = {
            @Reference(name = "pause", service = PauseControl.class, target = CloudHypervisorBackend.SEAM_TARGET),
            @Reference(name = "power", service = PowerControl.class, target = CloudHypervisorBackend.SEAM_TARGET)
        })
public class CloudHypervisorBackend extends VmmBackend {

    static final String NAME = "cloud-hypervisor";
    static final String SEAM_TARGET = "(" + SandboxBackend.NAME_PROPERTY + "=" + NAME + ")";

    @Activate
    public CloudHypervisorBackend(@Reference CloudHypervisorRuntime runtime) {
        super(runtime.vmm());
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean sandboxes() {
        return false;
    }
}
