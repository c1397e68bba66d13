package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.common.backend.DelegatingImagesBackend;
import io.vivarium.common.bundles.BundleClasses;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Registers {@link QemuBackend}. VMs outlive the component: deactivation only closes this
 * revision's monitor and agent connections (QEMU serves one client per socket), and the next
 * activation adopts the VMs. VM disks are made by whichever {@link StorageStrategy} for disks is
 * registered (storage-qcow2 in the qemu feature); without one the backend is unavailable and says why.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME,
        configurationPid = QemuConfig.PID)
@Designate(ocd = QemuConfig.class)
public class QemuBackendComponent extends DelegatingImagesBackend {

    private final DiskStorage disks = new DiskStorage();
    private final QemuBackend backend;

    @Activate
    public QemuBackendComponent(QemuConfig config, BundleContext context) {
        BundleClasses.loadAll(context.getBundle());
        this.backend = new QemuBackend(QemuSettings.from(config),
                Accelerator.detect(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm")), disks);
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void addStorage(StorageStrategy strategy) {
        disks.add(strategy);
    }

    void removeStorage(StorageStrategy strategy) {
        disks.remove(strategy);
    }

    @Deactivate
    void deactivate() {
        backend.close();
    }

    @Override
    protected SandboxBackend backend() {
        return backend;
    }

    @Override
    protected Images images() {
        return backend;
    }
}
