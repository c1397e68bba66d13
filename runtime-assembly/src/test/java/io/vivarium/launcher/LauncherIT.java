package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Starts the assembled distribution the way an operator does ({@code java -jar
 * lib/vivarium-launcher.jar serve ...}) and checks what it prints, /healthz, that every shipped
 * bundle is ACTIVE, and a clean, quick stop on SIGTERM.
 */
class LauncherIT {

    @TempDir
    Path tmp;

    private Process process;
    private final StringBuffer stderr = new StringBuffer();

    @AfterEach
    void kill() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void servesHealthzAndStopsOnSigterm() throws Exception {
        int port = freePort();
        Path state = tmp.resolve("state");
        Path javaTmp = Files.createDirectory(tmp.resolve("java-tmp"));
        BlockingQueue<String> stdout = startJava(List.of("-Djava.io.tmpdir=" + javaTmp, "-jar", launcherJar().toString()),
                "serve", "--state", state.toString(), "--port", Integer.toString(port));

        String listening = stdout.poll(60, TimeUnit.SECONDS);
        assertEquals("Vivarium is listening on http://127.0.0.1:" + port, listening, "first stdout line; stderr:\n" + stderr);
        String token = stdout.poll(5, TimeUnit.SECONDS);
        Path tokens = state.resolve("tokens");
        assertEquals("Operator token: " + tokens + "  (curl -H \"Authorization: Bearer $(awk '!/^#/ && NF {print $1; exit}' " + tokens
                + ")\" http://127.0.0.1:" + port + "/v1/backends)", token);

        assertEquals(200, get("http://127.0.0.1:" + port + "/healthz"));
        assertTrue(Files.readString(tokens).matches("(?s)" + Pattern.quote(Tokens.HEADER) + "[0-9a-f]{64} default operator\n"));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tokens)));
        assertTrue(Files.isDirectory(state.resolve("felix-cache")), "framework storage under the state dir");
        Path scratch = state.resolve("felix-cache/fileinstall");
        for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30); !Files.isDirectory(scratch)
                && System.nanoTime() < end; ) {
            Thread.sleep(50);
        }
        assertTrue(Files.isDirectory(scratch), "FileInstall makes its scratch directory in the framework's storage");
        try (Stream<Path> left = Files.list(javaTmp)) {
            assertEquals(List.of(), left.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("fileinstall"))
                    .toList(), "nothing of FileInstall's in java.io.tmpdir, which a killed daemon would leave there");
        }

        process.destroy(); // SIGTERM
        // a deadline, not a timing: a stop that hangs is the failure (it takes well under a second)
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "stopped within 30 s of SIGTERM");
        assertEquals(0, process.exitValue(), "exit code after SIGTERM; stderr:\n" + stderr);
        // the launcher reports bundles that are not active right after the token line: all of stderr is read now
        awaitStreams();
        assertFalse(stderr.toString().contains("not active"), "every bundle is ACTIVE; stderr:\n" + stderr);
    }

    @Test
    void aSecondDaemonOnTheSameStateDirectoryExitsOneNamingTheFirst() throws Exception {
        Path state = tmp.resolve("state");
        BlockingQueue<String> stdout = start("serve", "--state", state.toString(), "--port", Integer.toString(freePort()));
        Process first = process;
        try {
            assertNotNull(stdout.poll(60, TimeUnit.SECONDS), "the first daemon listens; stderr:\n" + stderr);
            start("serve", "--state", state.toString(), "--port", Integer.toString(freePort()));
            assertTrue(process.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, process.exitValue());
            assertTrue(first.isAlive(), "the first daemon is left alone");
            awaitStreams();
            assertTrue(stderr.toString().contains("another daemon (pid " + first.pid() + ") is using the state directory "
                    + state), stderr.toString());
        } finally {
            first.destroyForcibly();
            first.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void badArgumentsExitTwo() throws Exception {
        start("serve", "--port", "eighty");
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(2, process.exitValue());
        awaitStreams();
        assertTrue(stderr.toString().contains("usage: vivarium serve"), stderr.toString());
    }

    /** What a start that names a feature the distribution lacks says. */
    private static final String UNKNOWN_FEATURE = "unknown feature 'nosuch' (available: api-v1, cloud-hypervisor, core, "
            + "fingerprint-sha256, fingerprint-stat, firecracker, fleet, gvisor, images-oci, metrics, procbox, qemu, "
            + "state-postgres, storage-reflink)";

    @Test
    void unknownFeatureExitsTwo() throws Exception {
        start("serve", "--state", tmp.resolve("s").toString(), "--features", "core,nosuch");
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(2, process.exitValue());
        awaitStreams();
        assertTrue(stderr.toString().contains(UNKNOWN_FEATURE), stderr.toString());
    }

    @Test
    void runsFromTheClassPathToo() throws Exception {
        // java -cp 'lib/*' io.vivarium.launcher.Main: the features are read (Jackson from lib/) before
        // the unknown one is reported.
        String lib = Path.of(System.getProperty("vivarium.dist"), "lib").toString();
        startJava(List.of("-cp", lib + "/*", Main.class.getName()), "serve", "--state", tmp.resolve("s").toString(),
                "--features", "core,api-v1,nosuch");
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        awaitStreams();
        assertEquals(2, process.exitValue(), stderr.toString());
        assertTrue(stderr.toString().contains(UNKNOWN_FEATURE), stderr.toString());
        assertFalse(stderr.toString().contains("Exception"), stderr.toString());
    }

    @Test
    void busyPortExitsOneAtOnce() throws Exception {
        try (ServerSocket busy = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            start("serve", "--state", tmp.resolve("s").toString(), "--port", Integer.toString(busy.getLocalPort()));
            assertTrue(process.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, process.exitValue());
            awaitStreams();
            assertTrue(stderr.toString().contains("cannot listen on 127.0.0.1:" + busy.getLocalPort()), stderr.toString());
        }
    }

    // ------------------------------------------------------------------------------------------

    private final List<Thread> pumps = new ArrayList<>();

    /** {@code java -jar lib/vivarium-launcher.jar args...} */
    private BlockingQueue<String> start(String... args) throws IOException {
        return startJava(List.of("-jar", launcherJar().toString()), args);
    }

    private static Path launcherJar() {
        String dist = System.getProperty("vivarium.dist");
        assertNotNull(dist, "failsafe sets vivarium.dist");
        Path jar = Path.of(dist, "lib", "vivarium-launcher.jar");
        assertTrue(Files.isRegularFile(jar), jar + " exists");
        return jar;
    }

    private BlockingQueue<String> startJava(List<String> javaArgs, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(javaArgs);
        cmd.addAll(List.of(args));
        process = new ProcessBuilder(cmd).directory(tmp.toFile()).start();
        process.getOutputStream().close();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        pumps.add(pump(process.getInputStream(), line -> lines.add(line)));
        pumps.add(pump(process.getErrorStream(), line -> stderr.append(line).append('\n')));
        return lines;
    }

    private void awaitStreams() throws InterruptedException {
        for (Thread t : pumps) {
            t.join(5000);
        }
    }

    private static Thread pump(InputStream in, java.util.function.Consumer<String> sink) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    sink.accept(line);
                }
            } catch (IOException e) {
                // process gone
            }
        });
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static int get(String url) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(5000);
        try {
            return c.getResponseCode();
        } finally {
            c.disconnect();
        }
    }

}
