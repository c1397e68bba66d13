package io.vivarium.guest.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;

/**
 * Our agent, the binary the guest-agent module ships as a classpath resource, started on the host
 * on a Unix socket in a temp directory.
 */
final class VivariumAgent implements AutoCloseable {
    private static final String RESOURCE = "/io/vivarium/guestagent/vivarium-agent";

    private final Path home;
    private final Path socket;
    private final Process process;

    private VivariumAgent(Path home, Path socket, Process process) {
        this.home = home;
        this.socket = socket;
        this.process = process;
    }

    static VivariumAgent start() throws IOException {
        Path home = Files.createTempDirectory("vivarium-agent-test");
        Path binary = home.resolve("vivarium-agent");
        try (InputStream in = VivariumAgent.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is not on the test classpath: build the guest-agent module");
            }
            Files.copy(in, binary, StandardCopyOption.REPLACE_EXISTING);
        }
        Files.setPosixFilePermissions(binary, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path socket = home.resolve("agent.sock");
        Path log = home.resolve("agent.log");
        Process process = new ProcessBuilder(binary.toString(), "--listen", "unix:" + socket)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        VivariumAgent agent = new VivariumAgent(home, socket, process);
        Deadline started = Deadline.after(Duration.ofSeconds(10));
        while (!Files.exists(socket)) {
            if (!process.isAlive() || started.expired()) {
                String output = Files.readString(log);
                agent.close();
                throw new IllegalStateException("vivarium-agent did not start: " + output);
            }
            Thread.onSpinWait();
        }
        return agent;
    }

    Path socket() {
        return socket;
    }

    /** A client holding one connection for all its calls, requests multiplexed by id, as over virtio-serial. */
    GuestAgentClient streamClient() {
        return new GuestAgentClient(GuestTransport.stream("vivarium-agent stream", () -> {
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
