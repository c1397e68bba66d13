package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
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
public class QemuBackendComponent implements SandboxBackend, Images {

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
    public String name() {
        return backend.name();
    }

    @Override
    public Capabilities capabilities() {
        return backend.capabilities();
    }

    @Override
    public Availability availability() {
        return backend.availability();
    }

    @Override
    public Map<String, String> details() {
        return backend.details();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return backend.create(spec);
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, OperationContext context) {
        return backend.create(spec, context);
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        return backend.adopt(spec, state);
    }

    @Override
    public void pause(SandboxInstance instance) {
        backend.pause(instance);
    }

    @Override
    public void resume(SandboxInstance instance) {
        backend.resume(instance);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        backend.destroy(spec, state);
    }

    @Override
    public String captures() {
        return backend.captures();
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        return backend.capture(instance, imageDir, storage, context);
    }

    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        return backend.fork(spec, imageDir, storage, context);
    }

    @Override
    public CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        return backend.compact(from, to, artifacts, storage, context);
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return backend.missingArtifact(imageDir);
    }
}
