package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon that dies while a gVisor container is paused for a checkpoint (a branch captures it)
 * leaves the container frozen, its agent deaf and the backend's {@code checkpointing} mark beside
 * it; the next daemon's adoption runs it on. It is running and usable again, its processes go on
 * (a counter in its memory keeps counting), its files are intact, and the branch cut short is
 * {@code failed}. The daemon halts at the gVisor backend's test point {@code container.paused}
 * ({@code -Dvivarium.test.halt.at}): paused, its checkpoint written, not yet resumed.
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

    @Test
    void aDaemonThatDiesWhileAContainerIsPausedForItsCheckpointLeavesItToRunOnAtTheNextStart() throws Exception {
        Path state = dir.resolve("state");
        Daemon first = daemons.start(state, FEATURES, List.of("-Dvivarium.test.halt.at=container.paused"));
        Api api = new Api(first.baseUrl(), first.adminToken());
        String id = api.createSandbox(Map.of("backend", "gvisor"));
        Api.sh(api, id, "echo mine > /work/mine.txt; " + COUNTER);
        long counted = awaitCountBeyond(api, id, 0);
        CompletableFuture<Api.Response> branch = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes/" + id + "/branch", Map.of("tag", "br"));
            } catch (Exception halted) {
                return null;
            }
        });
        assertTrue(first.awaitExit(PATIENCE), "the daemon did not reach container.paused");
        assertNull(branch.get(60, TimeUnit.SECONDS), "the branch never answered");
        Path mark = checkpointingMark(state.resolve("sandboxes").resolve(id));
        Path runscRoot = mark.resolveSibling("runsc");
        assertEquals("paused", runscStatus(runscRoot), "the daemon died with the container frozen");

        Daemon second = daemons.start(state, FEATURES);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode sb = after.get("/v1/sandboxes/" + id).body();
        assertEquals("running", sb.get("status").asText(), sb.toString());
        assertEquals("running", runscStatus(runscRoot), "resumed by the adoption");
        assertFalse(Files.exists(mark), "the mark is gone with what it marked");
        awaitCountBeyond(after, id, counted);
        assertEquals("mine\n", Api.sh(after, id, "cat /work/mine.txt"), "its files are intact");
        JsonNode br = SnapshotsIT.find(after.get("/v1/snapshots").body(), "br");
        assertEquals("failed", br.get("status").asText(), br.toString());
        assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "br")).status(), "never forked");
        assertEquals(204, after.delete("/v1/snapshots/br").status());
        assertEquals(201, after.post("/v1/sandboxes/" + id + "/branch", Map.of("tag", "br")).status(),
                "and it can be branched again");
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
        Process p = new ProcessBuilder("/usr/bin/runsc", "--root=" + root, "list").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        // ID PID STATUS BUNDLE CREATED OWNER
        List<String> rows = out.lines().skip(1).filter(l -> !l.isBlank()).toList();
        assertEquals(1, rows.size(), out);
        return rows.get(0).trim().split("\\s+")[2];
    }
}
