package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.vivarium.common.testpoints.TestPoints;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * A QEMU Machine Protocol client: JSON lines on QEMU's monitor socket. Reads the greeting,
 * negotiates capabilities, then one reader thread routes each answer to its command by id and
 * hands every asynchronous event (which may come between a command and its answer) to
 * {@code events}. When the connection ends (QEMU exited, or {@link #close()}), {@code closed} runs
 * once on the reader thread.
 */
final class QmpClient implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_LINE = 1 << 20;
    /** How long each of the commands that abandon a job may take. */
    private static final Duration ABANDON_TIMEOUT = Duration.ofSeconds(5);
    private static final System.Logger LOG = System.getLogger(QmpClient.class.getName());

    private final SocketChannel channel;
    private final BufferedReader in;
    private final OutputStream out;
    private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Void>> jobs = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    /**
     * What this connection's job ids start with: a job whose end a daemon did not live to see stays
     * in QEMU concluded and never dismissed, and the next daemon's connection must not reuse its id
     * (QEMU: "Job ID ... already in use").
     */
    private final String jobPrefix = "vivarium-" + Long.toHexString(new SecureRandom().nextLong()) + "-";
    private volatile boolean open = true;

    private QmpClient(SocketChannel channel) {
        this.channel = channel;
        this.in = new BufferedReader(new InputStreamReader(Channels.newInputStream(channel), StandardCharsets.UTF_8));
        this.out = Channels.newOutputStream(channel);
    }

    /**
     * Connects, reads the greeting and enters command mode within {@code timeout}.
     *
     * @param events called on the reader thread with each event object
     * @param closed called on the reader thread once the connection has ended
     */
    static QmpClient connect(Path socket, Duration timeout, String name, Consumer<JsonNode> events, Runnable closed)
            throws IOException {
        SocketChannel channel = SocketChannel.open(UnixDomainSocketAddress.of(socket));
        QmpClient client = new QmpClient(channel);
        try {
            // QEMU serves one monitor client at a time: a second one waits, silent, for the first to go
            CompletableFuture<String> greeting = CompletableFuture.supplyAsync(client::readGreeting);
            greeting.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            Thread reader = new Thread(() -> client.readAnswers(events, closed), "qmp " + name);
            reader.setDaemon(true);
            reader.start();
            client.execute("qmp_capabilities", null, timeout);
            return client;
        } catch (TimeoutException e) {
            client.close();
            throw new IOException("QMP on " + socket + " sent no greeting within " + timeout.toMillis()
                    + " ms (QEMU serves one monitor client at a time: is another still connected?)");
        } catch (ExecutionException e) {
            client.close();
            throw new IOException("QMP on " + socket + ": " + e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new IOException("interrupted while connecting to QMP on " + socket, e);
        } catch (IOException | RuntimeException e) {
            client.close();
            throw e;
        }
    }

    private String readGreeting() {
        try {
            JsonNode greeting = parse(in.readLine());
            if (!greeting.has("QMP")) {
                throw new IllegalStateException("not a QMP greeting: " + greeting);
            }
            return greeting.toString();
        } catch (IOException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Runs {@code command}; its {@code return} value, or a {@link QmpException} with QEMU's error. */
    JsonNode execute(String command, ObjectNode arguments, Duration timeout) throws IOException {
        long id = ids.incrementAndGet();
        CompletableFuture<JsonNode> answer = new CompletableFuture<>();
        pending.put(id, answer);
        ObjectNode request = JSON.createObjectNode().put("execute", command);
        if (arguments != null) {
            request.set("arguments", arguments);
        }
        request.put("id", id);
        try {
            synchronized (out) {
                if (!open) {
                    throw new IOException("the QMP connection is closed");
                }
                out.write((request + "\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
            JsonNode reply = answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (reply.has("error")) {
                throw new QmpException(command, reply.get("error").path("desc").asText(reply.get("error").toString()));
            }
            return reply.path("return");
        } catch (TimeoutException e) {
            throw new IOException("QMP " + command + " got no answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw new IOException("QMP " + command + ": " + e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for QMP " + command, e);
        } finally {
            pending.remove(id);
        }
    }

    /**
     * Runs a job command ({@code snapshot-save}, {@code snapshot-load}, ...) to its end: starts it
     * under a fresh {@code job-id}, waits for the event that it concluded, reads how it ended and
     * dismisses it. A job that failed is a {@link QmpException} with QEMU's error.
     */
    void runJob(String command, ObjectNode arguments, Duration timeout) throws IOException {
        String id = jobPrefix + command + "-" + ids.incrementAndGet();
        CompletableFuture<Void> concluded = new CompletableFuture<>();
        jobs.put(id, concluded);
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            execute(command, arguments.deepCopy().put("job-id", id), timeout);
            // QEMU runs the job from here on, whether or not this daemon lives to see it end
            TestPoints.reach(command + ".started");
            concluded.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            String error = null;
            for (JsonNode job : execute("query-jobs", null, timeout)) {
                if (id.equals(job.path("id").asText()) && job.hasNonNull("error")) {
                    error = job.get("error").asText();
                }
            }
            execute("job-dismiss", JSON.createObjectNode().put("id", id), timeout);
            if (error != null) {
                throw new QmpException(command, error);
            }
        } catch (TimeoutException e) {
            abandonJob(id);
            throw new IOException("QMP job " + command + " did not end within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            throw new IOException("QMP job " + command + ": " + e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for QMP job " + command, e);
        } finally {
            jobs.remove(id);
        }
    }

    /** Cancels and dismisses a job this client stopped waiting for, so that it neither runs on nor lingers in QEMU. */
    private void abandonJob(String id) {
        for (String command : new String[] {"job-cancel", "job-dismiss"}) {
            try {
                execute(command, JSON.createObjectNode().put("id", id), ABANDON_TIMEOUT);
            } catch (IOException e) {
                // it may have concluded meanwhile (no cancel then) or be still cancelling (no dismiss yet)
                LOG.log(System.Logger.Level.DEBUG, command + " " + id + ": " + e.getMessage());
            }
        }
    }

    boolean isOpen() {
        return open;
    }

    private void readAnswers(Consumer<JsonNode> events, Runnable closed) {
        IOException end = new IOException("QEMU closed the QMP connection");
        try {
            String line;
            while ((line = in.readLine()) != null) {
                JsonNode message = parse(line);
                if (message.has("event")) {
                    concluded(message);
                    events.accept(message);
                } else if (message.path("id").canConvertToLong()) {
                    CompletableFuture<JsonNode> waiting = pending.remove(message.get("id").longValue());
                    if (waiting != null) {
                        waiting.complete(message);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            end = e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        } finally {
            open = false;
            for (CompletableFuture<JsonNode> waiting : pending.values()) {
                waiting.completeExceptionally(end);
            }
            for (CompletableFuture<Void> waiting : jobs.values()) {
                waiting.completeExceptionally(end);
            }
            closeChannel();
            closed.run();
        }
    }

    private void concluded(JsonNode event) {
        JsonNode data = event.path("data");
        if ("JOB_STATUS_CHANGE".equals(event.path("event").asText()) && "concluded".equals(data.path("status").asText())) {
            CompletableFuture<Void> waiting = jobs.get(data.path("id").asText());
            if (waiting != null) {
                waiting.complete(null);
            }
        }
    }

    private static JsonNode parse(String line) throws IOException {
        if (line == null) {
            throw new IOException("QEMU closed the QMP connection");
        }
        if (line.length() > MAX_LINE) {
            throw new IOException("a QMP message longer than " + MAX_LINE + " characters");
        }
        JsonNode node = JSON.readTree(line);
        if (node == null || !node.isObject()) {
            throw new IOException("not a QMP message: " + line);
        }
        return node;
    }

    private void closeChannel() {
        try {
            channel.close();
        } catch (IOException e) {
            // nothing left to do with it
        }
    }

    /** Ends the connection; the reader thread then runs {@code closed} and ends. */
    @Override
    public void close() {
        open = false;
        closeChannel();
    }

    /** QEMU refused a command; the message is its {@code desc}. */
    static final class QmpException extends IOException {
        private static final long serialVersionUID = 1L;

        QmpException(String command, String desc) {
            super("QMP " + command + " failed: " + desc);
        }
    }
}
