package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A daemon that dies while a gVisor container is paused for a checkpoint (a branch captures it; a
 * dry-run takes one to revert to) leaves the container frozen, its agent deaf and the backend's
 * {@code checkpointing} mark beside it; the next daemon's adoption runs it on. It is running and
 * usable again, its processes go on (a counter in its memory keeps counting), its files are
 * intact, and what was cut short is undone: the branch is {@code failed}, the dry-run's intent is
 * dropped (its checkpoint was never finished). The daemon halts at the gVisor backend's test point
 * {@code container.paused} ({@code -Dvivarium.test.halt.at}): paused, its checkpoint written, not
 * yet resumed.
 */
class GvisorCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features", "core,api-v1,gvisor,storage-reflink,fingerprint-sha256");
    private static final Duration PATIENCE = Duration.ofSeconds(120);
    /** A counter in /tmp (the sandbox's memory), replaced whole so a reader never finds it empty. */
    private static final String COUNTER = "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count;"
            + " sleep 0.05; done) >/dev/null 2>&1 </dev/null &";

    @TempDir
    Path dir;

    @BeforeAll
    static void needsGvisorCheckpoints() {
        String missing = Host.gvisorCheckpointsMissing();
        Assumptions.assumeTrue(missing == null, missing);
    }

    @ParameterizedTest(name = "during a {0}")
    @ValueSource(strings = { "branch", "dry-run" })
    void aDaemonThatDiesWhileAContainerIsPausedForACheckpointLeavesItToRunOnAtTheNextStart(String operation)
            throws Exception {
        Path state = dir.resolve("state");
        Daemon first = daemons.start(state, FEATURES, List.of("-Dvivarium.test.halt.at=container.paused"));
        Api api = new Api(first.baseUrl(), first.adminToken());
        String id = api.createSandbox(Map.of("backend", "gvisor"));
        Api.sh(api, id, "echo mine > /work/mine.txt; " + COUNTER);
        long counted = awaitCountBeyond(api, id, 0);
        String path = "/v1/sandboxes/" + id + "/" + operation;
        Map<String, Object> body = operation.equals("branch") ? Map.of("tag", "br")
                : Map.of("command", "echo changed > /work/mine.txt", "paths", List.of("/work"));
        CompletableFuture<Api.Response> cut = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post(path, body);
            } catch (Exception halted) {
                return null;
            }
        });
        assertTrue(first.awaitExit(PATIENCE), "the daemon did not reach container.paused in a " + operation);
        assertNull(cut.get(60, TimeUnit.SECONDS), "the " + operation + " never answered");
        Path sandboxDir = state.resolve("sandboxes").resolve(id);
        Path mark = checkpointingMark(sandboxDir);
        Path runscRoot = mark.resolveSibling("runsc");
        assertEquals("paused", runscStatus(runscRoot), "the daemon died with the container frozen");
        Path intent = sandboxDir.resolve("dry-run-intent.json");
        assertEquals(operation.equals("dry-run"), Files.exists(intent), "a dry-run's intent is left for the next daemon");

        Daemon second = daemons.start(state, FEATURES);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode sb = after.get("/v1/sandboxes/" + id).body();
        assertEquals("running", sb.get("status").asText(), sb.toString());
        assertEquals("running", runscStatus(runscRoot), "resumed by the adoption");
        assertFalse(Files.exists(mark), "the mark is gone with what it marked");
        awaitCountBeyond(after, id, counted);
        assertEquals("mine\n", Api.sh(after, id, "cat /work/mine.txt"), "its files are intact");
        if (operation.equals("branch")) {
            JsonNode br = SnapshotsIT.find(after.get("/v1/snapshots").body(), "br");
            assertEquals("failed", br.get("status").asText(), br.toString());
            assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "br")).status(), "never forked");
            assertEquals(204, after.delete("/v1/snapshots/br").status());
        } else {
            assertFalse(Files.exists(intent), "the dry-run's intent is dropped");
        }
        Api.Response again = after.post(path, body);
        assertTrue(again.status() == 200 || again.status() == 201, operation + " again: " + again.raw().body());
        assertEquals("mine\n", Api.sh(after, id, "cat /work/mine.txt"), "and the sandbox runs on");
    }

    /** Waits until the container's counter is past {@code than}: its processes run. */
    private static long awaitCountBeyond(Api api, String id, long than) throws Exception {
        return DeployFolder.await("the counter of " + id + " past " + than, PATIENCE, () -> {
            String out = Api.sh(api, id, "cat /tmp/count 2>/dev/null || echo 0").strip();
            long count = Long.parseLong(out);
            return count > than ? count : null;
        });
    }

    /** The {@code checkpointing} mark the gVisor backend keeps in the container's directory while a checkpoint is under way. */
    private static Path checkpointingMark(Path sandboxDir) throws IOException {
        try (Stream<Path> found = Files.find(sandboxDir, 3, (p, a) -> p.getFileName().toString().equals("checkpointing"))) {
            return found.findFirst().orElseThrow(() -> new AssertionError("no checkpointing mark in " + sandboxDir));
        }
    }

    /** The status runsc reports for the one container under {@code root}. */
    private static String runscStatus(Path root) throws Exception {
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(30), "/usr/bin/runsc", "--root=" + root, "list");
        String out = ran.output();
        assertEquals(0, ran.exitCode(), out);
        // ID PID STATUS BUNDLE CREATED OWNER
        List<String> rows = out.lines().skip(1).filter(l -> !l.isBlank()).toList();
        assertEquals(1, rows.size(), out);
        return rows.get(0).trim().split("\\s+")[2];
    }
}
