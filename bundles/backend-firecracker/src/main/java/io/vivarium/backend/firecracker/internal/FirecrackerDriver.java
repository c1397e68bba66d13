package io.vivarium.backend.firecracker.internal;

import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MemoryBackend;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotCreate;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotLoad;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.VsockOverride;
import io.vivarium.kit.vmm.VmmBoot;
import io.vivarium.kit.vmm.VmmDriver;
import io.vivarium.kit.vmm.VmmSnapshots;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Firecracker as the kit's {@link io.vivarium.kit.vmm.VmmLauncher} drives it: {@code firecracker
 * --api-sock SOCKET --id ID}, then over its API {@code PUT /machine-config}, {@code /boot-source},
 * {@code /drives/workspace}, {@code /vsock} and {@code /actions InstanceStart}; {@code PATCH /vm}
 * pauses and resumes, {@code GET /} says which; a full {@code PUT /snapshot/create} saves a paused
 * guest ({@value #STATE} and {@value #MEMORY}), {@code PUT /snapshot/load} with the vsock's socket
 * given anew ({@code vsock_override}) loads it into a fresh process. {@code reboot=k}
 * makes a guest's reboot end the VMM, and Firecracker has no PCI ({@code pci=off} spares the probe).
 */
final class FirecrackerDriver implements VmmDriver, VmmSnapshots {

    /** The microVM's state (devices, vCPUs) in a saved directory. */
    static final String STATE = "vmstate";
    /** The guest's memory in a saved directory. */
    static final String MEMORY = "memory";
    private static final Duration API_TIMEOUT = Duration.ofSeconds(10);
    /** Long enough to write a guest's whole memory. */
    private static final Duration SNAPSHOT_TIMEOUT = Duration.ofSeconds(120);

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
            api.configureMachine(new MachineConfig(boot.vcpus(), boot.memoryMib(), true));
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

    /**
     * Full, or on a base a diff: Firecracker writes only the pages written since its last snapshot
     * or load into a memory file that exists and is of the guest's size (a copy of the base's, a
     * clone where the filesystem makes one), which is then whole.
     */
    @Override
    public String save(Path apiSocket, Path dir, Path base) throws IOException {
        String state = dir.resolve(STATE).toString();
        String memory = dir.resolve(MEMORY).toString();
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, SNAPSHOT_TIMEOUT)) {
            if (base != null && Files.isRegularFile(base.resolve(MEMORY))) {
                Files.copy(base.resolve(MEMORY), dir.resolve(MEMORY));
                api.createSnapshot(SnapshotCreate.diff(state, memory));
                return DIFF;
            }
            api.createSnapshot(SnapshotCreate.full(state, memory));
            return FULL;
        }
    }

    /** The drive's path is the one saved (the sandbox's own disk, which the kit put back), the vsock's socket the one given. */
    @Override
    public void load(Path apiSocket, Path dir, Path vsockSocket) throws IOException {
        try (FirecrackerApi api = new FirecrackerApi(apiSocket, SNAPSHOT_TIMEOUT)) {
            api.loadSnapshot(new SnapshotLoad(dir.resolve(STATE).toString(), MemoryBackend.file(dir.resolve(MEMORY).toString()),
                    true, true, new VsockOverride(vsockSocket.toString())));
        }
    }
}
