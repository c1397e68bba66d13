package io.vivarium.backend.qemu.internal;

import java.io.IOException;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Pausing a VM: QMP {@code stop} stops its vCPUs, its memory, devices and the agent's connection
 * stay; {@code cont} runs it on. QEMU's run state keeps the pause, so a daemon that adopts the VM
 * finds it paused ({@link QemuInstance}).
 */
@Component(service = PauseControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + QemuBackend.NAME)
public class QemuPause implements PauseControl {

    private final QemuRuntime runtime;

    @Activate
    public QemuPause(@Reference QemuRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public void pause(SandboxInstance instance) {
        QemuInstance vm = runtime.instances().own(instance);
        try {
            vm.qmp().execute("stop", null, QemuInstance.QMP_TIMEOUT);
            vm.paused(true);
        } catch (IOException e) {
            throw ApiException.internal("cannot pause sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void resume(SandboxInstance instance) {
        QemuInstance vm = runtime.instances().own(instance);
        try {
            vm.qmp().execute("cont", null, QemuInstance.QMP_TIMEOUT);
            vm.paused(false);
        } catch (IOException e) {
            throw ApiException.internal("cannot resume sandbox " + vm.id() + ": " + e.getMessage(), e);
        }
    }
}
