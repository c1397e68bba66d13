package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * An in-process peer speaking PROTOCOL.md's {@code vivarium-*} extensions over a Unix socket, running
 * real (harmless) host processes for exec. Answers echo ids; exec waits are deferred to a thread of
 * their own, so other requests on the same connection are answered first. {@link #override} lets a
 * test make it misbehave: return a raw line to send instead, {@link #HANG} to never answer, or
 * {@link #CLOSE} to drop the connection.
 */
final class FakeAgent implements AutoCloseable {
    static final String HANG = "\u0000hang";
    static final String CLOSE = "\u0000close";
    /** Prefix of a line held back until {@link #sendLate} sends it: an answer its caller gave up on. */
    static final String LATE = "\u0000late:";
    static final String VERSION = "vivarium-agent fake";
    private static final List<String> COMMANDS = List.of("guest-sync-delimited", "guest-ping", "guest-info",
            "guest-get-time", "guest-set-time", "guest-fsfreeze-status", "guest-fsfreeze-freeze-list", "guest-fsfreeze-thaw",
            "guest-shutdown", "vivarium-exec", "vivarium-exec-poll", "vivarium-exec-kill", "vivarium-file-read",
            "vivarium-file-write");

    private final ObjectMapper json = new ObjectMapper();
    private final ServerSocketChannel server;
    private final Path socket;
    private final List<SocketChannel> connections = new ArrayList<>();
    private final Map<Long, Process> processes = new ConcurrentHashMap<>();
    private final Map<Long, Long> startedAt = new ConcurrentHashMap<>();
    private final Map<Long, Output> outputs = new ConcurrentHashMap<>();
    private final java.util.Set<Long> timedOut = ConcurrentHashMap.newKeySet();
    private final AtomicLong handles = new AtomicLong();
    final AtomicInteger open = new AtomicInteger();
    final AtomicInteger maxOpen = new AtomicInteger();
    final AtomicInteger execsStarted = new AtomicInteger();
    final AtomicInteger accepted = new AtomicInteger();
    /** Every command received, in order. */
    final List<String> received = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Every request received, whole (command and arguments), in order. */
    final List<JsonNode> requests = new java.util.concurrent.CopyOnWriteArrayList<>();
    volatile Function<JsonNode, String> override = request -> null;

    private final boolean stock;
    /** Sends the line held back by {@link #LATE}, or null. */
    private volatile Late late;

    private record Late(OutputStream out, byte[] line) {
    }

    FakeAgent(Path socket) throws IOException {
        this(socket, false);
    }

    /** {@code stock}: calls itself qemu-ga, lists no extension and echoes no id (as PROTOCOL.md lets stock do). */
    FakeAgent(Path socket, boolean stock) throws IOException {
        this.socket = socket;
        this.stock = stock;
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        Thread acceptor = new Thread(this::accept, "fake-agent accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    Path socket() {
        return socket;
    }

    private void accept() {
        try {
            while (true) {
                SocketChannel connection = server.accept();
                synchronized (connections) {
                    connections.add(connection);
                }
                accepted.incrementAndGet();
                maxOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
                Thread thread = new Thread(() -> serve(connection), "fake-agent connection");
                thread.setDaemon(true);
                thread.start();
            }
        } catch (IOException closed) {
            // server closed
        }
    }

    private void serve(SocketChannel connection) {
        try (connection) {
            InputStream in = Channels.newInputStream(connection);
            OutputStream out = Channels.newOutputStream(connection);
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            int b;
            while ((b = in.read()) >= 0) {
                if (b != '\n') {
                    line.write(b);
                    continue;
                }
                JsonNode request = json.readTree(line.toByteArray());
                line.reset();
                received.add(request.path("execute").asText());
                requests.add(request);
                String forced = override.apply(request);
                if (HANG.equals(forced)) {
                    continue;
                }
                if (CLOSE.equals(forced)) {
                    return;
                }
                if (forced != null && forced.startsWith(LATE)) {
                    late = new Late(out, forced.substring(LATE.length()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    continue;
                }
                if (forced != null) {
                    send(out, forced.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                    continue;
                }
                handle(request, out);
            }
        } catch (IOException closed) {
            // peer went away
        } finally {
            open.decrementAndGet();
        }
    }

    /** Sends the answer held back by {@link #LATE} now, on the connection its request came on. */
    void sendLate() throws IOException {
        Late held = late;
        if (held == null) {
            throw new IllegalStateException("no answer is held back");
        }
        late = null;
        send(held.out(), held.line());
    }

    /** The requests received with this command, in order. */
    List<JsonNode> requests(String command) {
        return requests.stream().filter(r -> r.path("execute").asText().equals(command)).toList();
    }

    private void handle(JsonNode request, OutputStream out) throws IOException {
        String command = request.path("execute").asText();
        JsonNode arguments = request.path("arguments");
        JsonNode id = stock ? null : request.get("id");
        if (stock && command.startsWith("vivarium-")) {
            command = "unknown " + command;
        }
        try {
            switch (command) {
                case "guest-sync-delimited" -> {
                    synchronized (out) {
                        out.write(0xFF);
                    }
                    reply(out, id, arguments.get("id"));
                }
                case "guest-ping", "guest-set-time" -> reply(out, id, json.createObjectNode());
                case "guest-fsfreeze-thaw", "guest-fsfreeze-freeze-list" ->
                    reply(out, id, json.getNodeFactory().numberNode(arguments.path("mountpoints").size()));
                case "guest-info" -> {
                    ObjectNode info = json.createObjectNode().put("version", stock ? "7.2.0-fake" : VERSION);
                    COMMANDS.stream().filter(name -> !stock || !name.startsWith("vivarium-"))
                            .forEach(name -> info.withArray("supported_commands").addObject().put("name", name)
                            .put("enabled", true).put("success-response", !name.equals("guest-shutdown")));
                    reply(out, id, info);
                }
                case "guest-get-time" -> reply(out, id, json.getNodeFactory().numberNode(System.currentTimeMillis() * 1_000_000L));
                case "guest-fsfreeze-status" -> reply(out, id, json.getNodeFactory().textNode("thawed"));
                case "guest-shutdown" -> {
                    // no answer on success
                }
                case "vivarium-exec" -> startExec(arguments, id, out);
                case "vivarium-exec-poll" -> deferPoll(arguments.path("handle").asLong(), arguments.path("wait-ms").asLong(), id, out);
                case "vivarium-exec-kill" -> {
                    Process process = processes.get(arguments.path("handle").asLong());
                    if (process == null) {
                        error(out, id, "NotFound", "no such handle");
                    } else {
                        process.descendants().forEach(ProcessHandle::destroyForcibly);
                        process.destroyForcibly();
                        reply(out, id, json.createObjectNode());
                    }
                }
                case "vivarium-file-read" -> {
                    Path path = Path.of(arguments.path("path").asText());
                    byte[] all = Files.readAllBytes(path);
                    int offset = (int) Math.min(all.length, arguments.path("offset").asLong());
                    int end = (int) Math.min(all.length, offset + arguments.path("count").asLong(4096));
                    reply(out, id, json.createObjectNode()
                            .put("data-b64", Base64.getEncoder().encodeToString(Arrays.copyOfRange(all, offset, end)))
                            .put("eof", end == all.length).put("size", all.length));
                }
                case "vivarium-file-write" -> {
                    Path path = Path.of(arguments.path("path").asText());
                    long handle = arguments.path("handle").asLong(handles.incrementAndGet());
                    Path temp = path.resolveSibling("." + path.getFileName() + ".fake-" + handle);
                    byte[] data = Base64.getDecoder().decode(arguments.path("data-b64").asText());
                    Files.write(temp, data, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
                    ObjectNode answer = json.createObjectNode().put("bytes", data.length);
                    if (arguments.path("last").asBoolean(true)) {
                        Files.move(temp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                    } else {
                        answer.put("handle", handle);
                    }
                    reply(out, id, answer);
                }
                default -> error(out, id, "CommandNotFound", "The command " + command + " has not been found");
            }
        } catch (NoSuchFileException e) {
            error(out, id, "NotFound", "no such file: " + e.getMessage());
        }
    }

    private void startExec(JsonNode arguments, JsonNode id, OutputStream out) throws IOException {
        List<String> argv = new ArrayList<>();
        arguments.path("argv").forEach(arg -> argv.add(arg.asText()));
        ProcessBuilder builder = new ProcessBuilder(argv).directory(Path.of(arguments.path("cwd").asText("/")).toFile());
        builder.environment().clear();
        arguments.path("env").properties().forEach(entry -> builder.environment().put(entry.getKey(), entry.getValue().asText()));
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            error(out, id, "GenericError", e.getMessage());
            return;
        }
        execsStarted.incrementAndGet();
        long handle = handles.incrementAndGet();
        processes.put(handle, process);
        startedAt.put(handle, System.nanoTime());
        outputs.put(handle, new Output(drain(process.getInputStream()), drain(process.getErrorStream())));
        byte[] stdin = Base64.getDecoder().decode(arguments.path("stdin-b64").asText(""));
        try (OutputStream processIn = process.getOutputStream()) {
            processIn.write(stdin);
        }
        long timeout = arguments.path("timeout-ms").asLong(0);
        if (timeout > 0) {
            Thread killer = new Thread(() -> {
                try {
                    if (!process.waitFor(timeout, TimeUnit.MILLISECONDS)) {
                        timedOut.add(handle); // before the kill, which the exec waiter may see at once
                        process.descendants().forEach(ProcessHandle::destroyForcibly);
                        process.destroyForcibly();
                    }
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
            });
            killer.setDaemon(true);
            killer.start();
        }
        deferPoll(handle, arguments.path("wait-ms").asLong(0), id, out);
    }

    private void deferPoll(long handle, long waitMillis, JsonNode id, OutputStream out) throws IOException {
        Process process = processes.get(handle);
        if (process == null) {
            error(out, id, "NotFound", "no such handle");
            return;
        }
        Thread waiter = new Thread(() -> {
            try {
                boolean exited = process.waitFor(waitMillis, TimeUnit.MILLISECONDS);
                ObjectNode answer = json.createObjectNode().put("handle", handle).put("exited", exited);
                long started = startedAt.get(handle);
                boolean killedByTimeout = timedOut.contains(handle);
                String outB64 = "";
                String errB64 = "";
                if (exited) {
                    processes.remove(handle);
                    Output output = outputs.remove(handle);
                    outB64 = Base64.getEncoder().encodeToString(output.out().get(5, TimeUnit.SECONDS));
                    errB64 = Base64.getEncoder().encodeToString(output.err().get(5, TimeUnit.SECONDS));
                    int status = process.exitValue();
                    if (killedByTimeout || status > 128) {
                        answer.put("signal", status > 128 ? status - 128 : 9);
                    } else {
                        answer.put("exit-code", status);
                    }
                }
                answer.put("timed-out", killedByTimeout).put("out-b64", outB64).put("err-b64", errB64)
                        .put("out-truncated", false).put("err-truncated", false)
                        .put("duration-ms", (System.nanoTime() - started) / 1_000_000);
                reply(out, id, answer);
            } catch (IOException | InterruptedException | java.util.concurrent.ExecutionException
                    | java.util.concurrent.TimeoutException ignored) {
                // connection gone
            }
        }, "fake-agent exec wait");
        waiter.setDaemon(true);
        waiter.start();
    }

    private record Output(CompletableFuture<byte[]> out, CompletableFuture<byte[]> err) {
    }

    /** Reads a child's pipe on a thread of its own (a killed child's streams are closed under the reader). */
    private static CompletableFuture<byte[]> drain(InputStream pipe) {
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            try {
                int n;
                while ((n = pipe.read(buffer)) > 0) {
                    bytes.write(buffer, 0, n);
                }
            } catch (IOException closedByKill) {
                // keep what was read
            }
            result.complete(bytes.toByteArray());
        }, "fake-agent pipe");
        reader.setDaemon(true);
        reader.start();
        return result;
    }

    private void reply(OutputStream out, JsonNode id, JsonNode value) throws IOException {
        ObjectNode answer = json.createObjectNode();
        answer.set("return", value);
        if (id != null) {
            answer.set("id", id);
        }
        send(out, json.writeValueAsBytes(answer));
    }

    private void error(OutputStream out, JsonNode id, String errorClass, String desc) throws IOException {
        ObjectNode answer = json.createObjectNode();
        answer.putObject("error").put("class", errorClass).put("desc", desc);
        if (id != null) {
            answer.set("id", id);
        }
        send(out, json.writeValueAsBytes(answer));
    }

    private static void send(OutputStream out, byte[] line) throws IOException {
        synchronized (out) {
            out.write(line);
            out.write('\n');
            out.flush();
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        synchronized (connections) {
            for (SocketChannel connection : connections) {
                connection.close();
            }
        }
        processes.values().forEach(Process::destroyForcibly);
        Files.deleteIfExists(socket);
    }
}
