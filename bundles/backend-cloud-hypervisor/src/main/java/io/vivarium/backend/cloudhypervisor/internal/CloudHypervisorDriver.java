package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.ConsoleConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.CpusConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.DiskConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.MemoryConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.PayloadConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VmConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VsockConfig;
import io.vivarium.kit.vmm.VmmBoot;
import io.vivarium.kit.vmm.VmmDriver;
import io.vivarium.kit.vmm.VmmSnapshots;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Cloud Hypervisor as the kit's {@link io.vivarium.kit.vmm.VmmLauncher} drives it:
 * {@code cloud-hypervisor --api-socket path=SOCKET}, then {@code PUT vm.create} (the payload's kernel,
 * initramfs and command line, the workspace disk, the vsock device, the serial port on the VMM's
 * output, which is the VM's log) and {@code PUT vm.boot}; {@code vm.pause} and {@code vm.resume},
 * and {@code vm.info} says which; {@code vm.snapshot} saves a paused VM into a directory, {@code
 * vm.restore} loads it into a process with no VM (its vsock device on the socket path saved, the
 * sandbox's own). Its devices are PCI, which the guest image's virtio-pci modules serve.
 */
final class CloudHypervisorDriver implements VmmDriver, VmmSnapshots {

    private static final Duration API_TIMEOUT = Duration.ofSeconds(10);
    /** Long enough to write a guest's whole memory. */
    private static final Duration SNAPSHOT_TIMEOUT = Duration.ofSeconds(120);

    @Override
    public String name() {
        return "Cloud Hypervisor";
    }

    @Override
    public List<String> command(Path binary, Path apiSocket, String id) {
        return List.of(binary.toString(), "--api-socket", "path=" + apiSocket);
    }

    @Override
    public String bootArgs() {
        return "";
    }

    @Override
    public void ping(Path apiSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            api.version();
        }
    }

    @Override
    public void boot(Path apiSocket, VmmBoot boot) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            api.create(new VmConfig(CpusConfig.of(boot.vcpus()), MemoryConfig.mib(boot.memoryMib()),
                    new PayloadConfig(boot.kernel().toString(), boot.initramfs().toString(), boot.cmdline()),
                    List.of(new DiskConfig(boot.workspace().toString(), false)),
                    new VsockConfig(boot.guestCid(), boot.vsockSocket().toString()), new ConsoleConfig("Tty", null),
                    ConsoleConfig.off()));
            api.boot();
        }
    }

    @Override
    public void pause(Path apiSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            api.pause();
        }
    }

    @Override
    public void resume(Path apiSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            api.resume();
        }
    }

    @Override
    public boolean paused(Path apiSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            return "Paused".equals(api.state());
        }
    }

    /** {@code vm.shutdown}, then {@code vmm.shutdown}: the process ends with its VM. */
    @Override
    public void shutdown(Path apiSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, API_TIMEOUT)) {
            api.shutdown();
            api.shutdownVmm();
        }
    }

    /** Always full: the API this driver targets has no diff snapshot. */
    @Override
    public String save(Path apiSocket, Path dir, Path base) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, SNAPSHOT_TIMEOUT)) {
            api.snapshot(dir);
            return FULL;
        }
    }

    /**
     * {@code vm.restore} with {@code resume}: the saved configuration names the disk and the vsock's
     * socket by their paths, the sandbox's own, which the kit put back and freed.
     */
    @Override
    public void load(Path apiSocket, Path dir, Path vsockSocket) throws IOException {
        try (CloudHypervisorApi api = new CloudHypervisorApi(apiSocket, SNAPSHOT_TIMEOUT)) {
            api.restore(dir, true);
        }
    }
}
