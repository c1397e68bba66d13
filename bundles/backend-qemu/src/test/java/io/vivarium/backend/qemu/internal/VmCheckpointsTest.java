package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.OperationContext;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints over a scripted monitor: how QEMU's snapshot table and HMP's printed errors are read. */
class VmCheckpointsTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    /** Two snapshots of the disk node, newest first, and one of another node that is not the VM's. */
    private static final String NODES = "[{\"node-name\": \"other\", \"image\": {\"snapshots\": [{\"name\": \"x\"}]}},"
            + " {\"node-name\": \"work\", \"image\": {\"snapshots\": ["
            + "{\"name\": \"new\", \"date-sec\": 20, \"date-nsec\": 0, \"vm-state-size\": 7},"
            + "{\"name\": \"old\", \"date-sec\": 10, \"date-nsec\": 5, \"vm-state-size\": 9}]}}]";

    @TempDir
    Path dir;
    private FakeMonitor monitor;
    private QmpClient client;

    @AfterEach
    void stop() throws Exception {
        client.close();
        monitor.close();
    }

    private VmCheckpoints checkpoints(String humanOutput) throws Exception {
        Path socket = dir.resolve("qmp.sock");
        monitor = new FakeMonitor(socket, true, (command, id) -> List.of("{\"return\": " + switch (command) {
            case "query-named-block-nodes" -> NODES;
            case "human-monitor-command" -> "\"" + humanOutput + "\"";
            default -> "{}";
        } + ", \"id\": " + id + "}"));
        client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, () -> { });
        return new VmCheckpoints("vm1", () -> client);
    }

    @Test
    void listsTheDiskNodesSnapshotsOldestFirst() throws Exception {
        assertEquals(List.of(new CheckpointInfo("old", 10, 9L, VmCheckpoints.MODE),
                new CheckpointInfo("new", 20, 7L, VmCheckpoints.MODE)), checkpoints("").list());
    }

    @Test
    void whatTheHumanMonitorPrintsIsTheError() throws Exception {
        VmCheckpoints c = checkpoints("Error: No space left on device\\r\\n");
        ApiException saved = assertThrows(ApiException.class, () -> c.create("t1", context()));
        assertEquals(500, saved.status());
        assertTrue(saved.getMessage().contains("savevm t1: Error: No space left on device"), saved.getMessage());
        ApiException loaded = assertThrows(ApiException.class, () -> c.restore("old", context()));
        assertTrue(loaded.getMessage().contains("may be in its state from before or from the checkpoint"),
                loaded.getMessage());
    }

    @Test
    void aTakenTagIs409AndAnUnknownOne404OrFalse() throws Exception {
        VmCheckpoints c = checkpoints("");
        assertEquals(409, assertThrows(ApiException.class, () -> c.create("old", context())).status());
        assertEquals(404, assertThrows(ApiException.class, () -> c.restore("gone", context())).status());
        assertEquals(false, c.delete("gone"));
        assertEquals(true, c.delete("old"));
    }

    /**
     * A VM with the RAM-state node: QEMU's snapshot jobs name both nodes, a job ends with its
     * JOB_STATUS_CHANGE event and is dismissed, and a tag counts only once both nodes have it.
     */
    @Test
    void withTheRamStateNodeTheJobsNameBothNodes() throws Exception {
        Path socket = dir.resolve("qmp.sock");
        List<JsonNode> requests = new CopyOnWriteArrayList<>();
        Set<String> tags = new ConcurrentSkipListSet<>(Set.of("a"));
        String[] failure = {null};
        monitor = new FakeMonitor(socket, true, (FakeMonitor.RequestScript) request -> {
            String command = request.get("execute").asText();
            requests.add(request);
            String id = request.get("id").toString();
            JsonNode arguments = request.path("arguments");
            if (command.startsWith("snapshot-")) {
                if (failure[0] == null) {
                    switch (command) {
                        case "snapshot-save" -> tags.add(arguments.get("tag").asText());
                        case "snapshot-delete" -> tags.remove(arguments.get("tag").asText());
                        default -> { }
                    }
                }
                return List.of("{\"return\": {}, \"id\": " + id + "}", "{\"event\": \"JOB_STATUS_CHANGE\", "
                        + "\"data\": {\"status\": \"concluded\", \"id\": \"" + arguments.get("job-id").asText() + "\"}}");
            }
            String value = switch (command) {
                case "query-named-block-nodes" -> "[{\"node-name\": \"work\", \"image\": {\"snapshots\": ["
                        + tags.stream().map(t -> "{\"name\": \"" + t + "\", \"date-sec\": 1, \"vm-state-size\": 0}")
                                .collect(Collectors.joining(","))
                        + ", {\"name\": \"half\", \"date-sec\": 2, \"vm-state-size\": 0}]}},"
                        + " {\"node-name\": \"vmstate\", \"image\": {\"snapshots\": ["
                        + tags.stream().map(t -> "{\"name\": \"" + t + "\", \"date-sec\": 1, \"vm-state-size\": 5}")
                                .collect(Collectors.joining(",")) + "]}}]";
                case "query-jobs" -> "[{\"id\": \"other\", \"error\": \"not this one\"}, {\"id\": \""
                        + requests.stream().filter(r -> r.path("arguments").has("job-id")).reduce((x, y) -> y)
                                .orElseThrow().path("arguments").path("job-id").asText() + "\""
                        + (failure[0] == null ? "" : ", \"error\": \"" + failure[0] + "\"") + "}]";
                case "query-status" -> "{\"status\": \"running\"}";
                default -> "{}";
            };
            return List.of("{\"return\": " + value + ", \"id\": " + id + "}");
        });
        client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, () -> { });
        VmCheckpoints c = new VmCheckpoints("vm1", () -> client);

        assertEquals(List.of(new CheckpointInfo("a", 1, 5L, VmCheckpoints.MODE_SPLIT)), c.list());
        assertEquals(new CheckpointInfo("b", 1, 5L, VmCheckpoints.MODE_SPLIT), c.create("b", context()));
        c.restore("b", context());
        assertTrue(c.delete("b"));
        List<String> jobs = requests.stream().map(r -> r.get("execute").asText())
                .filter(x -> x.startsWith("snapshot-") || x.equals("job-dismiss") || x.equals("human-monitor-command"))
                .toList();
        assertEquals(List.of("snapshot-save", "job-dismiss", "snapshot-load", "job-dismiss", "snapshot-delete",
                "job-dismiss"), jobs);
        for (JsonNode r : requests) {
            if (r.get("execute").asText().startsWith("snapshot-")) {
                assertEquals("[\"work\",\"vmstate\"]", r.path("arguments").path("devices").toString());
                assertEquals(r.get("execute").asText().equals("snapshot-delete") ? "" : "vmstate",
                        r.path("arguments").path("vmstate").asText());
            }
        }

        // "half" is in the disk node only (as a forked child's copy of its parent's checkpoints): not listed, and
        // a save under its tag removes it from the disk first instead of failing
        requests.clear();
        assertEquals("half", c.create("half", context()).tag());
        List<JsonNode> snapshotJobs = requests.stream().filter(r -> r.get("execute").asText().startsWith("snapshot-")).toList();
        assertEquals("snapshot-delete", snapshotJobs.get(0).get("execute").asText());
        assertEquals("[\"work\"]", snapshotJobs.get(0).path("arguments").path("devices").toString());
        assertEquals("snapshot-save", snapshotJobs.get(1).get("execute").asText());

        failure[0] = "No space left on device";
        ApiException saved = assertThrows(ApiException.class, () -> c.create("c", context()));
        assertTrue(saved.getMessage().contains("snapshot-save failed: No space left on device"), saved.getMessage());
    }

    @Test
    void aJobThatOutlivesItsDeadlineIsCancelledAndDismissed() throws Exception {
        Path socket = dir.resolve("qmp-slow.sock");
        List<String> commands = new CopyOnWriteArrayList<>();
        monitor = new FakeMonitor(socket, true, (FakeMonitor.RequestScript) request -> {
            String command = request.get("execute").asText();
            commands.add(command);
            String value = command.equals("query-named-block-nodes")
                    ? "[{\"node-name\": \"work\", \"image\": {}}, {\"node-name\": \"vmstate\", \"image\": {}}]"
                    : "{}";
            // the job starts and never concludes
            return List.of("{\"return\": " + value + ", \"id\": " + request.get("id") + "}");
        });
        client = QmpClient.connect(socket, TIMEOUT, "test", event -> { }, () -> { });
        VmCheckpoints c = new VmCheckpoints("vm1", () -> client);
        c.list();

        ApiException saved = assertThrows(ApiException.class,
                () -> c.create("t", OperationContext.until(Instant.now().plusMillis(300))));

        assertTrue(saved.getMessage().contains("did not end within"), saved.getMessage());
        assertEquals(List.of("snapshot-save", "job-cancel", "job-dismiss"), commands.stream()
                .filter(x -> x.startsWith("snapshot-") || x.startsWith("job-")).toList());
    }

    private static OperationContext context() {
        return OperationContext.until(Instant.now().plus(TIMEOUT));
    }
}
