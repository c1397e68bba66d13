package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.vmm.VmmLauncher;
import io.vivarium.testkit.vmm.EmulatedGuest;
import io.vivarium.testkit.vmm.FakeVmm;
import io.vivarium.testkit.vmm.FakeVmmProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A {@code cloud-hypervisor} executable for hosts without KVM or Cloud Hypervisor: its API on
 * {@code --api-socket path=SOCKET}, validated against the pinned document and held to {@link
 * CloudHypervisorRules}, and an {@link EmulatedGuest} behind the vsock socket once the VM boots. It
 * runs until killed, taking its guest with it.
 */
final class FakeCloudHypervisorProcess {
    private FakeCloudHypervisorProcess() {
    }

    public static void main(String[] args) throws Exception {
        List<String> options = List.of(args);
        if (options.contains("--version")) {
            System.out.println("cloud-hypervisor v" + CloudHypervisorApi.TARGET + " (a fake: Vivarium's test double)");
            return;
        }
        int at = options.indexOf("--api-socket");
        if (at < 0 || at + 1 >= options.size() || !options.get(at + 1).startsWith("path=")) {
            System.err.println("fake cloud-hypervisor: --api-socket path=PATH is required");
            System.exit(2);
        }
        Path socket = Path.of(options.get(at + 1).substring("path=".length()));
        Path guest = Files.createDirectories(socket.resolveSibling("guest"));
        EmulatedGuest emulated = new EmulatedGuest(guest, AgentBinary.install(guest.resolve("bin")), VmmLauncher.AGENT_PORT);
        new FakeVmm(socket, CloudHypervisorRules.DOCUMENT, new CloudHypervisorRules(emulated));
    }

    /** An executable in {@code dir} that starts this fake, as {@code cloud-hypervisor} would be. */
    static Path executable(Path dir) throws IOException {
        return FakeVmmProcess.executable(dir, "cloud-hypervisor", FakeCloudHypervisorProcess.class);
    }
}
