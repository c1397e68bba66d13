package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.VmmBackend;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Sandboxes as Firecracker microVMs: the kit's {@link VmmBackend} on {@link FirecrackerRuntime}
 * (the guest image's kernel and initramfs, a workspace disk, the agent on vsock).
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + FirecrackerBackend.NAME,
        // its seams, referenced so that DS registers the backend after them (and unregisters it first)
        reference = {
            @Reference(name = "pause", service = PauseControl.class, target = FirecrackerBackend.SEAM_TARGET),
            @Reference(name = "power", service = PowerControl.class, target = FirecrackerBackend.SEAM_TARGET)
        })
public class FirecrackerBackend extends VmmBackend {

    static final String NAME = "firecracker";
    static final String SEAM_TARGET = "(" + SandboxBackend.NAME_PROPERTY + "=" + NAME + ")";

    @Activate
    public FirecrackerBackend(@Reference FirecrackerRuntime runtime) {
        super(runtime.vmm());
    }

    @Override
    public String name() {
        return NAME;
    }
}
