package io.vivarium.guest.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;

/**
 * Debian's stock qemu-ga started on the host ({@code qemu-ga -m unix-listen -p SOCK -t STATEDIR}).
 * It runs as root and executes on this host: tests send it only harmless commands and temp paths,
 * and never shutdown, freeze or set-time. Tests that use it are skipped when it is not installed.
 */
final class StockQemuGa implements AutoCloseable {
    private static final Path QEMU_GA = Path.of("/usr/sbin/qemu-ga");

    private final Path home;
    private final Path socket;
    private final Process process;

    private StockQemuGa(Path home, Path socket, Process process) {
        this.home = home;
        this.socket = socket;
        this.process = process;
    }

    static StockQemuGa start() throws IOException {
        assumeTrue(Files.isExecutable(QEMU_GA), "/usr/sbin/qemu-ga is missing: apt-get install qemu-guest-agent");
        Path home = Files.createTempDirectory("qemu-ga-test");
        Path state = Files.createDirectory(home.resolve("state"));
        Path socket = home.resolve("qga.sock");
        Path log = home.resolve("qemu-ga.log");
        Process process = new ProcessBuilder(QEMU_GA.toString(), "-m", "unix-listen", "-p", socket.toString(), "-t",
                state.toString()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        StockQemuGa agent = new StockQemuGa(home, socket, process);
        Deadline started = Deadline.after(java.time.Duration.ofSeconds(10));
        while (!Files.exists(socket)) {
            if (!process.isAlive() || started.expired()) {
                String output = Files.readString(log);
                agent.close();
                throw new IllegalStateException("qemu-ga did not start: " + output);
            }
            Thread.onSpinWait();
        }
        return agent;
    }

    Path socket() {
        return socket;
    }

    /** A client holding one connection for all its calls, as over a virtio-serial port. */
    GuestAgentClient streamClient() {
        return new GuestAgentClient(GuestTransport.stream("qemu-ga stream", () -> {
            SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(socket));
            return channel;
        }));
    }

    @Override
    public void close() throws IOException {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (var files = Files.walk(home)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }
}
