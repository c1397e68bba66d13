package io.vivarium.itests.e2e;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.TcpPorts;

/**
 * The assembled daemon, started as a separate process exactly as {@code ./vivarium serve} does,
 * with its own state directory and a free port. Tests get one from {@link Daemons}, which
 * {@linkplain #cleanUp() cleans up} after it whatever happened.
 */
final class Daemon {
    private final Path stateDir;
    private final int port;
    private final List<String> extraArgs;
    private final List<String> jvmOptions;
    private final List<String> output = new CopyOnWriteArrayList<>();
    /** Where a node runs: its network namespace, else null (this host's loopback). */
    private final NetNamespace namespace;
    private Process process;

    Daemon(Path stateDir, List<String> extraArgs, List<String> jvmOptions) throws IOException {
        this(stateDir, extraArgs, jvmOptions, null, TcpPorts.free());
    }

    private Daemon(Path stateDir, List<String> extraArgs, List<String> jvmOptions, NetNamespace namespace, int port) {
        this.stateDir = stateDir;
        this.port = port;
        this.extraArgs = extraArgs;
        this.jvmOptions = jvmOptions;
        this.namespace = namespace;
    }

    /**
     * A fleet node ({@code serve --node --listen}) inside {@code namespace}, listening on its
     * address; with a null namespace, on this host's loopback and a free port.
     */
    static Daemon node(Path stateDir, NetNamespace namespace, String nodeId, List<String> extraArgs) throws IOException {
        return node(stateDir, namespace, nodeId, extraArgs, List.of());
    }

    static Daemon node(Path stateDir, NetNamespace namespace, String nodeId, List<String> extraArgs, List<String> jvmOptions)
            throws IOException {
        int port = namespace == null ? TcpPorts.free() : NODE_PORT;
        String host = namespace == null ? "127.0.0.1" : namespace.address();
        List<String> args = new ArrayList<>(List.of("--node", "--node-id", nodeId, "--listen", host + ":" + port));
        args.addAll(extraArgs);
        return new Daemon(stateDir, List.copyOf(args), jvmOptions, namespace, port);
    }

    /** The port nodes listen on in their namespaces, where no other program listens. */
    static final int NODE_PORT = 9443;

    static Path distribution() {
        Path dist = Path.of(System.getProperty("vivarium.dist", "../runtime-assembly/target/vivarium")).toAbsolutePath();
        if (!Files.isDirectory(dist.resolve("lib"))) {
            throw new IllegalStateException("the distribution is not built at " + dist + ": run mvn install first");
        }
        return dist;
    }

    Daemon start() throws Exception {
        Path dist = distribution();
        List<String> cmd = new ArrayList<>();
        if (namespace != null) {
            cmd.addAll(namespace.exec());
        }
        if (Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
            // as the scripts start it: the daemon and everything it starts run with no_new_privs
            cmd.addAll(List.of("/usr/bin/setpriv", "--no-new-privs", "--"));
        }
        cmd.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(scriptOptions(dist));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", dist.resolve("lib") + "/*", "io.vivarium.launcher.Main", "serve", "--state", stateDir.toString()));
        if (!extraArgs.contains("--listen")) {
            cmd.addAll(List.of("--port", String.valueOf(port)));
        }
        if (!extraArgs.contains("--client-backends")) {
            // the tests name every backend they run (qemu, gvisor) as clients, as an operator allows with this
            cmd.addAll(List.of("--client-backends", "all"));
        }
        cmd.addAll(extraArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dist.toFile()).redirectErrorStream(true);
        pb.environment().put("LC_ALL", "C.UTF-8");
        process = pb.start();
        CompletableFuture<Boolean> ready = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (var in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    output.add(line);
                    if (line.contains("Vivarium is listening")) {
                        ready.complete(true);
                    }
                }
            } catch (IOException ignored) {
                // the process went away; the exit is reported below
            }
            ready.complete(false);
        }, "daemon-output-" + port);
        reader.setDaemon(true);
        reader.start();
        if (!ready.get(90, TimeUnit.SECONDS)) {
            throw new IllegalStateException("daemon did not start:\n" + String.join("\n", output));
        }
        return this;
    }

    private static List<String> scriptOptions;

    /**
     * The JVM options {@code bin/vivarium} starts the daemon with ({@code bin/jvm.sh}), so that tests
     * and benchmarks run the daemon as operators do; without the class-data archive, which only
     * shortens a start.
     */
    static synchronized List<String> scriptOptions(Path dist) throws IOException, InterruptedException {
        if (scriptOptions == null) {
            Bounded.Ran ran = Bounded.run(Duration.ofSeconds(30), "bash", "-c", "source \"$1/bin/jvm.sh\"; "
                    + "VIVARIUM_CDS=off daemon_java_opts \"$2\" \"$1\"; printf '%s\\n' \"${daemon_opts[@]}\"", "jvm-options",
                    dist.toString(), System.getProperty("java.home"));
            if (ran.exitCode() != 0) {
                throw new IOException("bin/jvm.sh did not give the daemon's options: " + ran.output());
            }
            scriptOptions = ran.output().lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        }
        return scriptOptions;
    }

    /** https:// for a daemon started with {@code --tls-cert} or as a node, which serve HTTPS only. */
    String baseUrl() {
        return (tls() ? "https" : "http") + "://" + (namespace != null ? namespace.address() : "127.0.0.1") + ":" + port;
    }

    /** Where a node listens, as {@code POST /v1/nodes} takes it. */
    String address() {
        return (namespace != null ? namespace.address() : "127.0.0.1") + ":" + port;
    }

    /** The node's pairing code, as its operator would paste it. */
    String pairingCode() throws IOException {
        return Files.readString(stateDir.resolve("pki/node/pairing-code")).strip();
    }

    private boolean tls() {
        return extraArgs.contains("--tls-cert") || extraArgs.contains("--node");
    }

    Path stateDir() {
        return stateDir;
    }

    /**
     * The token the daemon created in its state directory: an operator's, so it may call every route
     * (the file starts with a comment on the roles).
     */
    String adminToken() throws IOException {
        return Files.readAllLines(stateDir.resolve("tokens")).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).findFirst().orElseThrow().split("\\s+")[0];
    }

    List<String> output() {
        return output;
    }

    /** The first line the daemon printed that contains {@code fragment}, waiting up to {@code patience} for it. */
    String awaitOutput(String fragment, Duration patience) throws Exception {
        return DeployFolder.await("the daemon to print \"" + fragment + "\"", patience,
                () -> output.stream().filter(l -> l.contains(fragment)).findFirst().orElse(null));
    }

    /** Types {@code command} at the daemon's console: the Gogo shell that {@code serve --console} runs on its stdin. */
    void console(String command) throws IOException {
        if (!extraArgs.contains("--console")) {
            throw new IllegalStateException("the daemon was started without --console");
        }
        OutputStream stdin = process.getOutputStream();
        stdin.write((command + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
    }

    /** SIGTERM and wait: a clean stop. Returns the exit code. */
    int stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            Bounded.waitFor(process.destroyForcibly(), Duration.ofSeconds(30), "the daemon ends once killed");
        }
        return process.exitValue();
    }

    /** Waits for the daemon to end by itself (a test point halted it); false if it still runs after {@code patience}. */
    boolean awaitExit(Duration patience) throws InterruptedException {
        return process.waitFor(patience.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The exit code of a daemon that has ended. */
    int exitValue() {
        return process.exitValue();
    }

    /** SIGKILL: the daemon gets no chance to clean up. */
    void kill9() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(20, TimeUnit.SECONDS);
    }

    /** The daemon's own (Java) process id. */
    long pid() {
        return process.pid();
    }

    Duration uptime() {
        return process.info().startInstant().map(s -> Duration.between(s, java.time.Instant.now())).orElse(Duration.ZERO);
    }

    /**
     * Deletes what the test left: while the daemon runs, every sandbox of every tenant in its token
     * file through the API, then stops it; whether or not it ran, then kills what is left of its
     * sandboxes (processes whose arguments name the state directory: bwrap and the namespace
     * init it runs) and unmounts what is mounted under the state directory. Sandboxes outlive
     * the daemon by design, so only this keeps a failed test from leaving them running. A daemon
     * serving HTTPS is only stopped: {@link Api} trusts no test certificate, and the leftovers'
     * sweep still kills whatever sandbox it had.
     */
    void cleanUp() throws Exception {
        Throwable failure = null;
        if (process != null && process.isAlive() && !tls()) {
            for (String token : tokens()) {
                try {
                    new Api(baseUrl(), token).deleteAllSandboxes();
                } catch (Exception | AssertionError e) {
                    failure = e; // the contract's verdict on an answer too: the daemon is stopped all the same
                }
            }
        }
        if (process != null && process.isAlive()) {
            stop();
        }
        StateDirLeftovers.remove(stateDir);
        if (failure instanceof Exception e) {
            throw e;
        }
        if (failure != null) {
            throw (AssertionError) failure;
        }
    }

    /** The tokens the daemon accepts: its --token-file, else the one it created in the state directory. */
    private List<String> tokens() throws IOException {
        int i = extraArgs.indexOf("--token-file");
        Path file = i >= 0 ? Path.of(extraArgs.get(i + 1)) : stateDir.resolve("tokens");
        return Files.readAllLines(file).stream().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .map(l -> l.split("\\s+")[0]).toList();
    }
}
