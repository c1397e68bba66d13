package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The distribution's {@code bin/vivarium} run as a person runs it, nothing on its stdin. Its commands go to a
 * command-line server (the distribution's {@code CliServer}) that listens in this test JVM's own
 * {@code XDG_RUNTIME_DIR}; the directory is removed when the JVM ends, which stops the servers.
 */
final class CommandLine {
    private static final Path SERVERS = newServersDir();

    /** What it printed, and its exit code. */
    record Run(int code, String out, String err) {
    }

    private CommandLine() {
    }

    static Run run(Path workDir, Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("vivarium.dist"), "bin", "vivarium").toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(workDir.toFile());
        environment(pb.environment());
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the command line ended");
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    /** The folder the command-line servers' sockets are in. */
    static Path servers() {
        return SERVERS.resolve("vivarium");
    }

    /** What {@code bin/vivarium} needs from its environment here: the JDK, and where the command-line servers listen. */
    static void environment(Map<String, String> env) {
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("XDG_RUNTIME_DIR", SERVERS.toString());
    }

    private static Path newServersDir() {
        try {
            Path dir = Files.createTempDirectory("vivarium-cli-servers");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try (Stream<Path> files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                } catch (IOException e) {
                    // a temporary directory: the servers in it stop when their socket goes, or when idle
                }
            }));
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
