package io.vivarium.backend.firecracker.internal;

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
 * A {@code firecracker} executable for hosts without KVM or Firecracker: its API on {@code
 * --api-sock}, validated against the pinned document and held to {@link FirecrackerRules}, and an
 * {@link EmulatedGuest} behind the vsock socket once the microVM starts. It runs until killed,
 * taking its guest with it, as a Firecracker process does.
 */
final class FakeFirecrackerProcess {
    private FakeFirecrackerProcess() {
    }

    public static void main(String[] args) throws Exception {
        List<String> options = List.of(args);
        if (options.contains("--version")) {
            System.out.println("Firecracker v" + FirecrackerApi.TARGET + " (a fake: Vivarium's test double)");
            return;
        }
        int at = options.indexOf("--api-sock");
        if (at < 0 || at + 1 >= options.size()) {
            System.err.println("fake firecracker: --api-sock PATH is required");
            System.exit(2);
        }
        Path socket = Path.of(options.get(at + 1));
        Path guest = Files.createDirectories(socket.resolveSibling("guest"));
        EmulatedGuest emulated = new EmulatedGuest(guest, AgentBinary.install(guest.resolve("bin")), VmmLauncher.AGENT_PORT);
        new FakeVmm(socket, FirecrackerRules.DOCUMENT, new FirecrackerRules(emulated));
    }

    /** An executable in {@code dir} that starts this fake, as {@code firecracker} would be. */
    static Path executable(Path dir) throws IOException {
        return FakeVmmProcess.executable(dir, "firecracker", FakeFirecrackerProcess.class);
    }
}
