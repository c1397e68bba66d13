package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.OperationContext;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

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

    private static OperationContext context() {
        return OperationContext.until(Instant.now().plus(TIMEOUT));
    }
}
