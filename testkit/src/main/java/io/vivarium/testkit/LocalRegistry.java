package io.vivarium.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Debian's {@code docker-registry} (the CNCF distribution registry) on 127.0.0.1, plain HTTP,
 * storing in a directory of the test's: the only registry tests push to and pull from.
 */
public final class LocalRegistry implements AutoCloseable {
    public static final String BINARY = "/usr/bin/docker-registry";

    private final Process process;
    private final String host;

    private LocalRegistry(Process process, String host) {
        this.process = process;
        this.host = host;
    }

    /** Why this host cannot run one, or null when it can. */
    public static String missing() {
        return Files.isExecutable(Path.of(BINARY)) ? null : "needs " + BINARY + " (apt-get install docker-registry)";
    }

    /** Starts a registry storing under {@code dir}, and waits until it listens. */
    public static LocalRegistry start(Path dir) throws IOException {
        int port = TcpPorts.free();
        Files.createDirectories(dir);
        Path config = Files.writeString(dir.resolve("registry.yml"), "version: 0.1\nlog:\n  level: error\nstorage:\n"
                + "  filesystem:\n    rootdirectory: " + dir.resolve("storage") + "\nhttp:\n  addr: 127.0.0.1:" + port + "\n");
        Process process = new ProcessBuilder(BINARY, "serve", config.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("registry.log").toFile()).start();
        LocalRegistry registry = new LocalRegistry(process, "127.0.0.1:" + port);
        try {
            Bounded.until(Duration.ofSeconds(20), "the registry listens on 127.0.0.1:" + port, () -> TcpPorts.listening("127.0.0.1", port));
        } catch (AssertionError e) {
            registry.close();
            throw e;
        }
        return registry;
    }

    /** Its {@code host:port}. */
    public String host() {
        return host;
    }

    /** A reference to {@code name:tag} in it, as skopeo writes one: {@code docker://127.0.0.1:PORT/name:tag}. */
    public String reference(String nameAndTag) {
        return "docker://" + host + "/" + nameAndTag;
    }

    @Override
    public void close() {
        process.destroyForcibly();
        Bounded.waitFor(process, Duration.ofSeconds(10), "the registry ends");
    }
}
