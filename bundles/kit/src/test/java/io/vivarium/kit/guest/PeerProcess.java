package io.vivarium.kit.guest;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** An agent process started on the host, listening on a Unix socket in its own temp directory. */
final class PeerProcess implements AutoCloseable {
    private final String name;
    private final Path home;
    private final Path socket;
    private final Process process;

    private PeerProcess(String name, Path home, Path socket, Process process) {
        this.name = name;
        this.home = home;
        this.socket = socket;
        this.process = process;
    }

    /**
     * Runs {@code argv} (which must listen on {@code socket}) and waits until the socket accepts a
     * connection: the file appears at bind(), before listen(), when a connect is still refused.
     */
    static PeerProcess start(String name, Path home, Path socket, List<String> argv) throws IOException {
        Path log = home.resolve(name + ".log");
        Process process = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        PeerProcess peer = new PeerProcess(name, home, socket, process);
        Deadline started = Deadline.after(Duration.ofSeconds(10));
        while (!accepts(socket)) {
            if (!process.isAlive() || started.expired()) {
                String output = Files.readString(log);
                peer.close();
                throw new IllegalStateException(name + " did not start: " + output);
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                peer.close();
                throw new IOException("interrupted while waiting for " + name, e);
            }
        }
        return peer;
    }

    private static boolean accepts(Path socket) {
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(socket));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    Path socket() {
        return socket;
    }

    /** A client holding one connection for all its calls, as over a virtio-serial port. */
    GuestAgentClient streamClient() {
        return new GuestAgentClient(GuestTransport.stream(name + " stream", () -> {
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
