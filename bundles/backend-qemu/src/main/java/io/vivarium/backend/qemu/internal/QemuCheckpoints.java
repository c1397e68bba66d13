package io.vivarium.backend.qemu.internal;

import java.util.List;

import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * A VM's checkpoints, kept by its QEMU and restored in place ({@link VmCheckpoints}, each VM's own):
 * the same QEMU runs on from a checkpoint, a guest that had powered off included. A VM powered off
 * with no QEMU (a boot in a new one did not finish) has none to reach: a 409 until it is started.
 */
@Component(service = Checkpoints.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME)
public class QemuCheckpoints implements Checkpoints {

    private final QemuRuntime runtime;

    @Activate
    public QemuCheckpoints(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
    }

    private QemuInstance vm(SandboxInstance instance) {
        QemuInstance vm = runtime.instances().own(instance);
        vm.requireQemu();
        return vm;
    }

    @Override
    public CheckpointInfo create(SandboxInstance instance, String tag, OperationContext context) {
        return vm(instance).checkpoints().create(tag, context);
    }

    @Override
    public SandboxInstance restore(SandboxInstance instance, String tag, OperationContext context) {
        QemuInstance vm = vm(instance);
        vm.checkpoints().restore(tag, context);
        vm.runsAgain();
        return vm;
    }

    @Override
    public boolean delete(SandboxInstance instance, String tag) {
        return vm(instance).checkpoints().delete(tag);
    }

    @Override
    public List<CheckpointInfo> list(SandboxInstance instance) {
        return vm(instance).checkpoints().list();
    }
}
