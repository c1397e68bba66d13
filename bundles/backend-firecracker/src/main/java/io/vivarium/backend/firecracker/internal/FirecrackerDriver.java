package io.vivarium.backend.firecracker.internal;

import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import io.vivarium.kit.vmm.VmmBoot;
import io.vivarium.kit.vmm.VmmDriver;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Firecracker as the kit's {@link io.vivarium.kit.vmm.VmmLauncher} drives it: {@code firecracker
 * --api-sock SOCKET --id ID}, then over its API {@code PUT /machine-config}, {@code /boot-source},
 * {@code /drives/workspace}, {@code /vsock} and {@code /actions InstanceStart}; {@code PATCH /vm}
 * pauses and resumes, {@code GET /} says which. {@code reboot=k}
 * makes a guest's reboot end the VMM, and Firecracker has no PCI ({@code pci=off} spares the probe).
 */
final class FirecrackerDriver implements VmmDriver {

    private static final Duration API_TIMEOUT = Duration.ofSeconds(10);

    @Override
    public String name() {
        return "Firecracker";
    }

    @Override
    public List<String> command(Path binary, Path apiSocket, String id) {
        return List.of(binary.toString(), "--api-sock", apiSocket.toString(), "--id", id);
    }

    @Override
    public String bootArgs() {
        return "reboot=k pci=off";
    }

    @Override
    public void ping(Path apiSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            api.describe();
        }
    }

    @Override
    public void boot(Path apiSocket, VmmBoot boot) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            api.configureMachine(new MachineConfig(boot.vcpus(), boot.memoryMib(), false));
            api.setBootSource(new BootSource(boot.kernel().toString(), boot.initramfs().toString(), boot.cmdline()));
            api.putDrive(new Drive("workspace", boot.workspace().toString(), false, false));
            api.putVsock(new Vsock(boot.guestCid(), boot.vsockSocket().toString()));
            api.start();
        }
    }

    @Override
    public void pause(Path apiSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            api.pause();
        }
    }

    @Override
    public void resume(Path apiSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            api.resume();
        }
    }

    @Override
    public boolean paused(Path apiSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            return "Paused".equals(api.describe().state());
        }
    }

    /** {@code SendCtrlAltDel}: the guest reboots, which {@code reboot=k} makes the VMM's end. */
    @Override
    public void shutdown(Path apiSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, API_TIMEOUT)) {
            api.sendCtrlAltDel();
        }
    }
}
