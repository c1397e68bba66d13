package io.vivarium.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;

/**
 * A throwaway PostgreSQL cluster for tests: {@code initdb} into a temporary directory (as the
 * {@code postgres} user when the tests run as root, which PostgreSQL refuses to run as), started on
 * a free port of 127.0.0.1 with trust authentication, and removed by {@link #close}. Nothing depends
 * on a cluster the machine happens to run. Tests that need it are skipped, with the reason, on a
 * machine without PostgreSQL's server binaries (CI installs them).
 */
public final class PostgresCluster implements AutoCloseable {
    private final Path bin;
    private final Path dir;
    private final int port;
    private final boolean asPostgres;
    private final boolean fsync;

    private PostgresCluster(Path bin, Path dir, int port, boolean asPostgres, boolean fsync) {
        this.bin = bin;
        this.dir = dir;
        this.port = port;
        this.asPostgres = asPostgres;
        this.fsync = fsync;
    }

    /** The newest PostgreSQL server binaries of the machine, if any. */
    public static Optional<Path> binaries() {
        try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
            return versions.map(v -> v.resolve("bin")).filter(b -> Files.isExecutable(b.resolve("initdb")))
                    .max(Comparator.comparing(b -> Integer.parseInt(b.getParent().getFileName().toString().replaceAll("\\D", "0"))));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** Makes and starts a cluster without fsync (tests), or skips the calling test when the machine has no PostgreSQL server. */
    public static PostgresCluster start() throws IOException, InterruptedException {
        return start(false);
    }

    /** As {@link #start()}; with {@code fsync} as PostgreSQL ships (benchmarks that compare with stores that fsync). */
    public static PostgresCluster start(boolean fsync) throws IOException, InterruptedException {
        Optional<Path> bin = binaries();
        Assumptions.assumeTrue(bin.isPresent(), "no PostgreSQL server under /usr/lib/postgresql/*/bin "
                + "(apt-get install postgresql; .ci/run installs it)");
        boolean root = "root".equals(System.getProperty("user.name"));
        Path dir = Files.createTempDirectory("vivarium-pg-");
        if (root) {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
            run(List.of("chown", "postgres:postgres", dir.toString()), false);
        }
        PostgresCluster c = new PostgresCluster(bin.get(), dir, TcpPorts.free(), root, fsync);
        run(c.as(List.of(bin.get().resolve("initdb").toString(), "-D", dir.resolve("data").toString(), "-A", "trust",
                "-U", "postgres", "--no-sync", "-E", "UTF8")), true);
        c.startServer();
        c.psql("CREATE DATABASE vivarium");
        return c;
    }

    /** The URL of database {@code vivarium}, as an operator writes it (user postgres, no password: trust). */
    public String url() {
        return "postgresql://postgres@127.0.0.1:" + port + "/vivarium";
    }

    public int port() {
        return port;
    }

    /** Stops the server fast (connections cut, as a crash of the database would). */
    public void stop() throws IOException, InterruptedException {
        run(as(List.of(bin.resolve("pg_ctl").toString(), "-D", dir.resolve("data").toString(), "-m", "immediate", "-w",
                "stop")), true);
    }

    public void startServer() throws IOException, InterruptedException {
        run(as(List.of(bin.resolve("pg_ctl").toString(), "-D", dir.resolve("data").toString(), "-w", "-t", "60",
                "-l", dir.resolve("log").toString(), "-o", "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 "
                        + (fsync ? "" : "-c fsync=off ") + "-c max_connections=200", "start")), true);
    }

    /** Runs {@code sql} in database {@code vivarium} (or {@code postgres} before it exists) and returns what psql printed. */
    public String psql(String sql) throws IOException, InterruptedException {
        String db = sql.startsWith("CREATE DATABASE") ? "postgres" : "vivarium";
        return run(as(List.of(bin.resolve("psql").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port), "-U", "postgres",
                "-d", db, "-tAq", "-v", "ON_ERROR_STOP=1", "-c", sql)), true);
    }

    private List<String> as(List<String> command) {
        if (!asPostgres) {
            return command;
        }
        List<String> c = new ArrayList<>(List.of("runuser", "-u", "postgres", "--"));
        c.addAll(command);
        return c;
    }

    private static String run(List<String> command, boolean check) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).directory(Path.of("/").toFile()).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", command) + " did not end within 120 s");
        }
        String text = new String(out).strip();
        if (check && p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ": " + text);
        }
        return text;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            stop();
        } catch (IOException alreadyStopped) {
            // stopped by the test (a database that went away) and not started again
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
