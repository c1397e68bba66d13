package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The daemon stopped abruptly in the middle of a fork of many children, of a snapshot build, of a
 * branch and of a compaction, then started again: every finished child is re-adopted and the ones
 * being made are gone, the interrupted snapshot is {@code failed} (never forked) and its builder
 * sandbox removed, and once everything is deleted no process, mount or directory of a sandbox or a
 * snapshot is left. A build is killed ({@code kill -9}) while it waits for its builder, which it
 * does for as long as the test asks; everything else halts at named points between the steps
 * ({@code TestPoints}: {@code -Dvivarium.test.halt.at=POINT[#N]}, as abrupt as {@code kill -9}), so
 * that no outcome depends on how fast the host is.
 */
class SnapshotCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path state;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void aKill9DuringABuildLeavesAFailedSnapshotAndNoBuilder() throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        Api builder = api;
        CompletableFuture<Api.Response> build = CompletableFuture.supplyAsync(() -> {
            try {
                return builder.post("/v1/snapshots", Map.of("tag", "slow", "boot_wait_secs", 120));
            } catch (Exception e) {
                return null;
            }
        });
        Path record = state.resolve("snapshot-records/7-default.slow.json");
        waitFor(Duration.ofSeconds(60), () -> {
            try {
                return build.isDone() || Files.exists(record) && Files.readString(record).contains("\"builder\" : \"sb-");
            } catch (java.io.IOException e) {
                return false;
            }
        });
        assertFalse(build.isDone(), () -> "the build answered before its builder was recorded: " + build.join());
        assertEquals(1, count(api), "the builder runs");
        first.kill9();
        assertTrue(Bounded.get(build, Duration.ofSeconds(60), "the build's request ends once its daemon is killed") == null,
                "the build never answered");

        Daemon second = daemons.start(state);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode slow = SnapshotsIT.find(after.get("/v1/snapshots").body(), "slow");
        assertEquals("failed", slow.get("status").asText(), slow.toString());
        assertFalse(slow.get("bootable").asBoolean());
        assertTrue(slow.get("warning").asText().contains("daemon stopped"), slow.toString());
        assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "slow")).status());
        waitFor(Duration.ofSeconds(30), () -> count(after) == 0);
        assertFalse(Files.exists(state.resolve("snapshots/default/slow/image.staging")));
        assertEquals(204, after.delete("/v1/snapshots/slow").status());
        assertEquals(List.of(), StateDirLeftovers.processes(state), "the builder is gone");
    }

    /** Starts a daemon on {@code state} that halts when it reaches {@code point} ({@code POINT#N}: the N-th time). */
    private Daemon haltingAt(String point) throws Exception {
        return daemons.start(state, List.of(), List.of("-Dvivarium.test.halt.at=" + point));
    }

    private static CompletableFuture<Api.Response> async(Api api, String path, Object body) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return api.post(path, body);
            } catch (Exception e) {
                return null;
            }
        });
    }

    private static void haltedThere(Daemon daemon, String point, CompletableFuture<Api.Response> request)
            throws InterruptedException {
        assertTrue(daemon.awaitExit(Duration.ofSeconds(120)), "the daemon did not reach " + point);
        Bounded.until(Duration.ofSeconds(30), "the halted daemon's procbox launcher ends with it (its stdin closed)",
                () -> StateDirLeftovers.launchers(daemon.stateDir()).isEmpty());
        Api.Response answer = Bounded.get(request, Duration.ofSeconds(60), "the request ends once its daemon halted at " + point);
        assertTrue(answer == null, "the request never answered: " + answer);
    }

    @ParameterizedTest
    @ValueSource(strings = { "branch.reserved", "branch.staged", "branch.published" })
    void aBranchCutShortAtAnyStepLeavesAFailedTagAndItsParentRunning(String point) throws Exception {
        Daemon first = haltingAt(point);
        Api api = new Api(first.baseUrl(), first.adminToken());
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "base", "setup",
                List.of("sh", "-c", "echo template > /work/t.txt"))).status());
        String parent = api.post("/v1/sandboxes", Map.of("snapshot_tag", "base")).body().get(0).get("id").asText();
        Api.sh(api, parent, "echo mine > /work/mine.txt");
        haltedThere(first, point, async(api, "/v1/sandboxes/" + parent + "/branch", Map.of("tag", "br")));

        Daemon second = daemons.start(state);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode br = SnapshotsIT.find(after.get("/v1/snapshots").body(), "br");
        assertEquals("failed", br.get("status").asText(), br.toString());
        assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "br")).status(), "never forked");
        assertNoStaging();
        assertEquals("mine\n", Api.sh(after, parent, "cat /work/mine.txt"), "the parent is re-adopted and runs");
        assertEquals(204, after.delete("/v1/snapshots/br").status());
        assertFalse(Files.exists(state.resolve("snapshots/default/br")), "its files go with it");
        assertEquals(201, after.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "br")).status(),
                "the tag can be taken again");
        String child = after.post("/v1/sandboxes", Map.of("snapshot_tag", "br")).body().get(0).get("id").asText();
        assertEquals("mine\ntemplate\n", Api.sh(after, child, "cat /work/mine.txt /work/t.txt"));
        assertNothingLeftOnceDeleted(after, "br", "base");
    }

    @ParameterizedTest
    @ValueSource(strings = { "compact.reserved", "compact.staged", "compact.published" })
    void aCompactionCutShortAtAnyStepLeavesAFailedCopyAndTheSourceIntact(String point) throws Exception {
        Daemon first = haltingAt(point);
        Api api = new Api(first.baseUrl(), first.adminToken());
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "src", "setup",
                List.of("sh", "-c", "echo template > /work/t.txt"))).status());
        haltedThere(first, point, async(api, "/v1/snapshots/src/compact", Map.of("to", "flat")));

        Daemon second = daemons.start(state);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode flat = SnapshotsIT.find(after.get("/v1/snapshots").body(), "flat");
        assertEquals("failed", flat.get("status").asText(), flat.toString());
        assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "flat")).status());
        assertNoStaging();
        String child = after.post("/v1/sandboxes", Map.of("snapshot_tag", "src")).body().get(0).get("id").asText();
        assertEquals("template\n", Api.sh(after, child, "cat /work/t.txt"), "the source still forks");
        assertEquals(204, after.delete("/v1/snapshots/flat").status());
        assertEquals(201, after.post("/v1/snapshots/src/compact", Map.of("to", "flat")).status(), "the tag is free again");
        assertNothingLeftOnceDeleted(after, "flat", "src");
    }

    /**
     * 40 children, up to 16 made at once, and the daemon halts as the 24th starts ({@code fork.child},
     * before its create), or in the 23rd child's create ({@code create.*}: the builder is the first
     * create): at least 7 children are finished and at most 23, the others recorded or being made.
     */
    @ParameterizedTest
    @ValueSource(strings = { "fork.child#24", "create.recorded#24", "create.made#24" })
    void aForkOfManyCutShortBetweenOrInItsChildrenKeepsOnlyFinishedChildren(String point) throws Exception {
        Daemon first = haltingAt(point);
        Api api = new Api(first.baseUrl(), first.adminToken());
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "base", "setup",
                List.of("sh", "-c", "echo template > /work/t.txt"))).status());
        haltedThere(first, point, async(api, "/v1/sandboxes", Map.of("snapshot_tag", "base", "n", 40)));

        Daemon second = daemons.start(state);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode children = after.get("/v1/sandboxes").body();
        assertTrue(children.size() >= 7 && children.size() <= 23, "children: " + children);
        for (JsonNode child : children) {
            assertEquals("running", child.get("status").asText(), child.toString());
            assertEquals("base", child.get("image").asText());
            assertEquals("template\n", Api.sh(after, child.get("id").asText(), "cat /work/t.txt"));
        }
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(children.size(), dirs.count(), "the children being made left no directory");
        }
        assertNothingLeftOnceDeleted(after, "base");
    }

    private void assertNoStaging() throws Exception {
        try (var files = Files.walk(state.resolve("snapshots"))) {
            assertEquals(List.of(), files.filter(f -> f.getFileName().toString().endsWith(".staging")).toList(),
                    "no half-written image is left");
        }
    }

    /** Deletes every sandbox and the snapshots (leaves first): no process, sandbox or snapshot directory is left. */
    private void assertNothingLeftOnceDeleted(Api api, String... tags) throws Exception {
        api.deleteAllSandboxes();
        for (String tag : tags) {
            assertEquals(204, api.delete("/v1/snapshots/" + tag).status(), tag);
        }
        assertEquals(List.of(), StateDirLeftovers.processes(state), "no sandbox process is left");
        for (String dir : List.of("sandboxes", "snapshots/default")) {
            if (!Files.exists(state.resolve(dir))) {
                continue;
            }
            try (var left = Files.list(state.resolve(dir))) {
                assertEquals(List.of(), left.toList(), "nothing is left in " + dir);
            }
        }
    }

    private static int count(Api api) {
        try {
            Api.Response r = api.get("/v1/sandboxes");
            return r.status() == 200 ? r.body().size() : -1;
        } catch (Exception e) {
            return -1;
        }
    }

    private static void waitFor(Duration patience, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + patience);
            }
            Thread.sleep(10);
        }
    }
}
