package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Against a scripted monitor on a Unix socket that answers as QEMU does. */
class QmpClientTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    /** In a script: end the connection instead of answering, as a QEMU that exits. */
    private static final String CLOSE = "close";

    @TempDir
    Path dir;

    private ServerSocketChannel server;
    private Thread monitor;

    @AfterEach
    void stop() throws Exception {
        if (server != null) {
            server.close();
        }
        if (monitor != null) {
            monitor.join(5000);
        }
    }

    /** Serves one client: the greeting, then for each request the lines {@code script} gives (with its id). */
    private Path serve(Script script) throws IOException {
        Path socket = dir.resolve("qmp.sock");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        monitor = new Thread(() -> {
            try (SocketChannel client = server.accept()) {
                OutputStream out = Channels.newOutputStream(client);
                BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(client),
                        StandardCharsets.UTF_8));
                send(out, "{\"QMP\": {\"version\": {}, \"capabilities\": []}}");
                String line;
                while ((line = in.readLine()) != null) {
                    JsonNode request = JSON.readTree(line);
                    for (String answer : script.answer(request.get("execute").asText(), request.get("id").toString())) {
                        if (answer.equals(CLOSE)) {
                            return;
                        }
                        send(out, answer);
                    }
                }
            } catch (IOException e) {
                // the test closed the server
            }
        });
        monitor.start();
        return socket;
    }

    private static void send(OutputStream out, String line) throws IOException {
        out.write((line + "\r\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    interface Script {
        List<String> answer(String command, String id);
    }

    @Test
    void routesAnswersByIdAndHandsOnEventsThatComeBetween() throws Exception {
        BlockingQueue<JsonNode> events = new LinkedBlockingQueue<>();
        Path socket = serve((command, id) -> switch (command) {
            case "query-status" -> List.of(
                    "{\"event\": \"STOP\", \"timestamp\": {\"seconds\": 1, \"microseconds\": 2}}",
                    "{\"return\": {\"status\": \"internal-error\", \"running\": false}, \"id\": " + id + "}");
            default -> List.of("{\"return\": {}, \"id\": " + id + "}");
        });
        try (QmpClient client = QmpClient.connect(socket, TIMEOUT, "test", events::add, () -> { })) {
            JsonNode status = client.execute("query-status", null, TIMEOUT);
            assertEquals("internal-error", status.path("status").asText());
            assertEquals("STOP", events.poll(5, TimeUnit.SECONDS).path("event").asText());
        }
    }

    @Test
    void anErrorAnswerIsAQmpExceptionWithQemusDescription() throws Exception {
        Path socket = serve((command, id) -> command.equals("qmp_capabilities")
                ? List.of("{\"return\": {}, \"id\": " + id + "}")
                : List.of("{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command nope has not been found\"}, "
                        + "\"id\": " + id + "}"));
        try (QmpClient client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, () -> { })) {
            QmpClient.QmpException e = assertThrows(QmpClient.QmpException.class,
                    () -> client.execute("nope", null, TIMEOUT));
            assertEquals("QMP nope failed: The command nope has not been found", e.getMessage());
        }
    }

    @Test
    void whenQemuGoesTheWaitingCommandFailsAndClosedRuns() throws Exception {
        CountDownLatch closed = new CountDownLatch(1);
        Path socket = serve((command, id) -> command.equals("qmp_capabilities")
                ? List.of("{\"return\": {}, \"id\": " + id + "}") : List.of(CLOSE));
        QmpClient client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, closed::countDown);
        IOException e = assertThrows(IOException.class, () -> client.execute("quit", null, TIMEOUT));
        assertTrue(e.getMessage().contains("closed the QMP connection"), e.getMessage());
        assertTrue(closed.await(5, TimeUnit.SECONDS), "closed ran");
        assertFalse(client.isOpen());
    }

    @Test
    void aSilentMonitorIsATimeoutNotAHang() throws Exception {
        Path socket = dir.resolve("silent.sock");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        IOException e = assertThrows(IOException.class,
                () -> QmpClient.connect(socket, Duration.ofMillis(300), "test", event -> { }, () -> { }));
        assertTrue(e.getMessage().contains("sent no greeting within 300 ms"), e.getMessage());
    }
}
