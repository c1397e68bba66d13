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

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code kill -9} of the daemon in the middle of a fork of many children, of a snapshot build
 * and of a compaction, then a restart: every finished child is re-adopted and the one being made is gone, the
 * interrupted snapshot is {@code failed} (never forked) and its builder sandbox removed, and once
 * everything is deleted no process, mount or directory of a sandbox is left.
 */
class SnapshotCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final int CHILDREN = 60;

    @TempDir
    Path state;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void aKill9DuringAForkLeavesOnlyFinishedChildrenAndTheyAreReadopted() throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "base", "setup",
                List.of("sh", "-c", "echo template > /work/t.txt"))).status());
        Api forker = api;
        CompletableFuture<Api.Response> fork = CompletableFuture.supplyAsync(() -> {
            try {
                return forker.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", CHILDREN));
            } catch (Exception e) {
                return null;
            }
        });
        // the listing shows the children being made too (up to 4 at once): at least 5 are finished
        waitFor(Duration.ofSeconds(120), () -> count(forker) >= 9);
        first.kill9();
        Api.Response answered = fork.join();
        assertTrue(answered == null || answered.status() != 201, "the fork was cut short: " + answered);

        Daemon second = daemons.start(state);
        api = new Api(second.baseUrl(), second.adminToken());
        JsonNode children = api.get("/v1/sandboxes").body();
        assertTrue(children.size() >= 5 && children.size() < CHILDREN, "children: " + children.size());
        for (JsonNode child : children) {
            assertEquals("running", child.get("status").asText(), child.toString());
            assertEquals("base", child.get("image").asText());
            assertEquals("template\n", Api.sh(api, child.get("id").asText(), "cat /work/t.txt"));
        }
        api.deleteAllSandboxes();
        assertEquals(List.of(), StateDirLeftovers.processes(state), "no orphan child runs");
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(List.of(), dirs.toList(), "no child's directory is left");
        }
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
        assertTrue(build.join() == null, "the build never answered");

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

    @Test
    void aKill9DuringACompactionLeavesAFailedCopyAndTheSourceIntact() throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        // enough data that the copy (a full one on ext4) is still running when the daemon is killed
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "src", "disk_limit_mib", 2048, "setup",
                List.of("sh", "-c", "head -c 1073741824 /dev/urandom > /work/data && sync"))).status());
        Api compactor = api;
        CompletableFuture<Api.Response> compact = CompletableFuture.supplyAsync(() -> {
            try {
                return compactor.post("/v1/snapshots/src/compact", Map.of("to", "flat"));
            } catch (Exception e) {
                return null;
            }
        });
        Path staging = state.resolve("snapshots/default/flat/image.staging");
        waitFor(Duration.ofSeconds(60), () -> Files.isDirectory(staging) || compact.isDone());
        first.kill9();
        Assumptions.assumeTrue(compact.join() == null, "the copy finished before the daemon was killed");

        Daemon second = daemons.start(state);
        Api after = new Api(second.baseUrl(), second.adminToken());
        JsonNode flat = SnapshotsIT.find(after.get("/v1/snapshots").body(), "flat");
        assertEquals("failed", flat.get("status").asText(), flat.toString());
        assertFalse(Files.exists(staging), "the half-written copy is removed");
        assertEquals(409, after.post("/v1/sandboxes", Map.of("snapshot_tag", "flat")).status());
        JsonNode src = SnapshotsIT.find(after.get("/v1/snapshots").body(), "src");
        assertTrue(src.get("bootable").asBoolean(), src.toString());
        Api.Response child = after.post("/v1/sandboxes", Map.of("snapshot_tag", "src"));
        assertEquals(201, child.status());
        assertEquals("1073741824\n", Api.sh(after, child.body().get(0).get("id").asText(), "stat -c %s /work/data"));
        assertEquals(204, after.delete("/v1/snapshots/flat").status());
        assertEquals(201, after.post("/v1/snapshots/src/compact", Map.of("to", "flat")).status(), "the tag is free again");
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
