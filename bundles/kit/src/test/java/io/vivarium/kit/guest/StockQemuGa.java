package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Debian's stock qemu-ga started on the host ({@code qemu-ga -m unix-listen -p SOCK -t STATEDIR}).
 * It runs as root and executes on this host: tests send it only harmless commands and temp paths,
 * and never shutdown, freeze or set-time. Tests that use it are skipped when it is not installed.
 */
final class StockQemuGa {
    private static final Path QEMU_GA = Path.of("/usr/sbin/qemu-ga");

    private StockQemuGa() {
    }

    static PeerProcess start() throws IOException {
        assumeTrue(Files.isExecutable(QEMU_GA), "/usr/sbin/qemu-ga is missing: apt-get install qemu-guest-agent");
        Path home = Files.createTempDirectory("qemu-ga-test");
        Path state = Files.createDirectory(home.resolve("state"));
        Path socket = home.resolve("qga.sock");
        return PeerProcess.start("qemu-ga", home, socket,
                List.of(QEMU_GA.toString(), "-m", "unix-listen", "-p", socket.toString(), "-t", state.toString()));
    }
}
