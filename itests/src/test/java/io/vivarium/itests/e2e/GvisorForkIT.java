package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * gVisor snapshots end to end through HTTP on the built root filesystem: a snapshot of a container
 * that started a background process and a counter (in its /tmp, which lives in the sandbox's
 * memory), three children that each resume them and keep counting (each on its own workspace, the
 * read-only root shared), whose writes stay their own; a branch of a child, whose measured pause is
 * reported, and a grandchild that resumes the child's files and memory; then a daemon restart that
 * re-adopts the children, the branched one (now run by the sandbox process its restore started) too.
 * The state directory is on a loop-mounted XFS so that reflink is real.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GvisorForkIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,gvisor,storage-reflink,fingerprint-sha256");
    /** Whether $1 is a live sleep, with shell builtins only. */
    private static final String ALIVE = "read -r _ c s _ 2>/dev/null </proc/$1/stat && [ \"$c\" = '(sleep)' ] "
            + "&& [ \"$s\" != Z ] && echo alive || echo gone";
    /** The counter replaces its file whole (write, then rename): a reader never finds it truncated and empty. */
    private static final String SETUP = "echo parent > /work/state.txt; head -c 16 /dev/urandom | od -An -tx1 > /tmp/mem.txt;"
            + " sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > /work/bg.pid;"
            + " (i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done) >/dev/null 2>&1 </dev/null &";

    @TempDir
    static Path work;
    static Path state;
    static Api api;
    static Daemon daemon;
    static String memory;
    static List<String> children;

    @BeforeAll
    static void aSnapshotOfOneContainer() throws Exception {
        String missing = Host.gvisorCheckpointsMissing();
        Assumptions.assumeTrue(missing == null, missing);
        state = daemons.xfsStateDir(work);
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response r = api.post("/v1/snapshots", Map.of("tag", "gv", "backend", "gvisor",
                "setup", List.of("sh", "-c", SETUP)));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        assertEquals("files+memory", r.body().get("captures").asText());
        Path image = imageDir("gv");
        assertTrue(Files.isRegularFile(image.resolve("memory/checkpoint.img")), "the checkpoint in " + image);
        assertTrue(Files.isRegularFile(image.resolve("work/state.txt")), "the workspace in " + image);
    }

    @Test
    @Order(1)
    void threeChildrenResumeTheSnapshotAndAreEachTheirOwn() throws Exception {
        children = api.fork("gv", 3);
        for (String id : children) {
            assertEquals("parent\n", Api.sh(api, id, "cat /work/state.txt"));
            assertEquals("alive\n", Api.sh(api, id, "set -- $(cat /work/bg.pid); " + ALIVE),
                    "the background process started before the snapshot runs on in " + id);
            String mem = Api.sh(api, id, "cat /tmp/mem.txt");
            if (memory == null) {
                memory = mem;
            }
            assertEquals(memory, mem, "every child has the snapshot's /tmp (its memory)");
        }
        for (String id : children) {
            awaitCounting(id);
        }
        for (String id : children) {
            Api.sh(api, id, "echo " + id + " > /work/state.txt; echo " + id + " > /tmp/mem.txt");
        }
        for (String id : children) {
            assertEquals(id + "\n", Api.sh(api, id, "cat /work/state.txt /tmp/mem.txt | sort -u"),
                    "a child's writes are its own, in its workspace and its memory");
        }
        String late = api.fork("gv", 1).get(0);
        assertEquals("parent\n" + memory, Api.sh(api, late, "cat /work/state.txt /tmp/mem.txt"),
                "the snapshot is unchanged by its children");
        assertEquals(204, api.delete("/v1/sandboxes/" + late).status());
    }

    @Test
    @Order(2)
    void aBranchReportsItsPauseAndItsChildResumesTheBranchedChild() throws Exception {
        String child = children.get(0);
        long pidBefore = api.get("/v1/sandboxes/" + child).body().get("pid").asLong();
        Api.Response r = api.post("/v1/sandboxes/" + child + "/branch", Map.of("tag", "gv-branch"));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        JsonNode branch = r.body();
        assertEquals(child, branch.get("branched_from").asText());
        assertEquals("files+memory", branch.get("captures").asText());
        assertTrue(branch.get("pause_ms").asLong() > 0, "a measured pause: " + branch);
        assertEquals(child + "\n", Api.sh(api, child, "cat /work/state.txt"), "the branched child runs on");
        awaitCounting(child);

        String grandchild = api.fork("gv-branch", 1).get(0);
        assertEquals(child + "\n" + child + "\n", Api.sh(api, grandchild, "cat /work/state.txt /tmp/mem.txt"),
                "the grandchild has the child's files and memory at the branch");
        assertEquals("alive\n", Api.sh(api, grandchild, "set -- $(cat /work/bg.pid); " + ALIVE));
        assertNotEquals(pidBefore, 0L);
    }

    @Test
    @Order(3)
    void aDryRunOnAChildGoesThroughACheckpointAndLeavesFilesAndProcessesAsTheyWere() throws Exception {
        String child = children.get(2);
        JsonNode r = api.post("/v1/sandboxes/" + child + "/dry-run", Map.of("command",
                "rm /work/state.txt; echo x > /work/new.txt; kill $(cat /work/bg.pid); echo done",
                "paths", List.of("/work"))).body();
        assertEquals("done\n", r.get("stdout").asText(), r.toString());
        assertTrue(r.get("discarded").asBoolean(), r.toString());
        assertEquals("snapshot", r.get("reverted_via").asText(), "reverted through a checkpoint: " + r);
        assertTrue(r.get("changes").get("added").toString().contains("/work/new.txt"), r.toString());
        assertTrue(r.get("changes").get("deleted").toString().contains("/work/state.txt"), r.toString());
        assertEquals(child + "\nno new\n", Api.sh(api, child, "cat /work/state.txt; test -e /work/new.txt || echo no new"));
        assertEquals("alive\n", Api.sh(api, child, "set -- $(cat /work/bg.pid); " + ALIVE),
                "the process the dry-run killed runs again");
        awaitCounting(child);
    }

    @Test
    @Order(4)
    void aRestartedDaemonAdoptsTheChildrenTheBranchedOneToo() throws Exception {
        assertEquals(0, daemon.stop(), "SIGTERM stops the daemon cleanly");
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        for (String id : children) {
            JsonNode sb = api.get("/v1/sandboxes/" + id).body();
            assertEquals("running", sb.get("status").asText(), sb.toString());
            assertEquals(id + "\n", Api.sh(api, id, "cat /work/state.txt"));
            assertEquals("alive\n", Api.sh(api, id, "set -- $(cat /work/bg.pid); " + ALIVE));
        }
        Api.Response r = api.post("/v1/sandboxes/" + children.get(0) + "/branch", Map.of("tag", "after-restart"));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        String grandchild = api.fork("after-restart", 1).get(0);
        assertEquals(children.get(0) + "\n", Api.sh(api, grandchild, "cat /work/state.txt"));
    }

    /** Waits until the counter the snapshot started goes on in {@code id}: each child makes progress. */
    private static void awaitCounting(String id) throws Exception {
        long first = Long.parseLong(Api.sh(api, id, "cat /tmp/count").strip());
        Instant deadline = Instant.now().plus(Duration.ofSeconds(20));
        while (Long.parseLong(Api.sh(api, id, "cat /tmp/count").strip()) <= first) {
            assertTrue(Instant.now().isBefore(deadline), "the counter stopped at " + first + " in " + id);
        }
    }

    private static Path imageDir(String tag) throws IOException {
        try (Stream<Path> dirs = Files.walk(state.resolve("snapshots"), 3)) {
            return dirs.filter(d -> d.getFileName().toString().equals(tag)).findFirst()
                    .orElseThrow(() -> new AssertionError("no snapshot directory " + tag)).resolve("image");
        }
    }
}
