package io.vivarium.backend.firecracker.internal;

import io.vivarium.testkit.vmm.FakeVmm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
        int at = options.indexOf("--api-sock");
        if (at < 0 || at + 1 >= options.size()) {
            System.err.println("fake firecracker: --api-sock PATH is required");
            System.exit(2);
        }
        Path socket = Path.of(options.get(at + 1));
        new FakeVmm(socket, FirecrackerRules.DOCUMENT,
                new FirecrackerRules(new EmulatedGuest(Files.createDirectories(socket.resolveSibling("guest")))));
    }

    /** An executable in {@code dir} that starts this fake with this JVM and its class path, as {@code firecracker} would be. */
    static Path executable(Path dir) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path script = dir.resolve("firecracker");
        Files.writeString(script, "#!/bin/sh\nexec '" + java + "' -Xshare:auto -XX:TieredStopAtLevel=1 -cp '"
                + System.getProperty("java.class.path") + "' " + FakeFirecrackerProcess.class.getName() + " \"$@\"\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }
}
