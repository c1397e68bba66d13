package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Against a scripted monitor on a Unix socket that answers as QEMU does. */
class QmpClientTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @TempDir
    Path dir;

    private FakeMonitor monitor;

    @AfterEach
    void stop() throws Exception {
        if (monitor != null) {
            monitor.close();
        }
    }

    private Path serve(FakeMonitor.Script script) throws IOException {
        Path socket = dir.resolve("qmp.sock");
        monitor = new FakeMonitor(socket, true, script);
        return socket;
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

    /**
     * QEMU keeps a job that no client dismissed (its daemon died before the job ended) under its id:
     * the next connection, a new daemon's, starts its jobs under ids of its own.
     */
    @Test
    void aJobIdIsNeverOneAnEarlierConnectionLeftInQemu() throws Exception {
        Set<String> jobsInQemu = ConcurrentHashMap.newKeySet();
        FakeMonitor.RequestScript qemu = request -> {
            String id = request.get("id").toString();
            String jobId = request.path("arguments").path("job-id").asText(null);
            if (jobId != null && !jobsInQemu.add(jobId)) {
                return List.of("{\"error\": {\"class\": \"GenericError\", \"desc\": \"Job ID '" + jobId
                        + "' already in use\"}, \"id\": " + id + "}");
            }
            List<String> answer = new ArrayList<>(List.of("{\"return\": " + (request.get("execute").asText()
                    .equals("query-jobs") ? "[]" : "{}") + ", \"id\": " + id + "}"));
            if (jobId != null) {
                answer.add("{\"event\": \"JOB_STATUS_CHANGE\", \"data\": {\"status\": \"concluded\", \"id\": \""
                        + jobId + "\"}}");
            }
            return answer;
        };
        for (String daemon : List.of("first", "second")) {
            Path socket = dir.resolve(daemon + ".sock");
            try (FakeMonitor m = new FakeMonitor(socket, true, qemu);
                    QmpClient client = QmpClient.connect(socket, TIMEOUT, daemon, event -> { }, () -> { })) {
                client.runJob("snapshot-load", JsonNodeFactory.instance.objectNode().put("tag", "t"), TIMEOUT);
            }
        }
        assertEquals(2, jobsInQemu.size(), jobsInQemu.toString());
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
                ? List.of("{\"return\": {}, \"id\": " + id + "}") : List.of(FakeMonitor.CLOSE));
        QmpClient client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, closed::countDown);
        IOException e = assertThrows(IOException.class, () -> client.execute("quit", null, TIMEOUT));
        assertTrue(e.getMessage().contains("closed the QMP connection"), e.getMessage());
        assertTrue(closed.await(5, TimeUnit.SECONDS), "closed ran");
        assertFalse(client.isOpen());
    }

    @Test
    void aSilentMonitorIsATimeoutNotAHang() throws Exception {
        Path socket = dir.resolve("silent.sock");
        monitor = new FakeMonitor(socket, false, (command, id) -> List.of());
        IOException e = assertThrows(IOException.class,
                () -> QmpClient.connect(socket, Duration.ofMillis(300), "test", event -> { }, () -> { }));
        assertTrue(e.getMessage().contains("sent no greeting within 300 ms"), e.getMessage());
    }
}
