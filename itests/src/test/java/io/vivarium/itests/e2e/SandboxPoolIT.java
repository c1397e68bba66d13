package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * procbox's pool of sandboxes launched ahead, through the assembled daemon: a create of the
 * default spec that the pool serves answers like a cold one (its own id as hostname, a fresh
 * workspace, the default limits, files, delete), and no pooled sandbox outlives a clean stop, nor
 * (past the next start) a kill -9.
 */
class SandboxPoolIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final long WAIT_NANOS = 60_000_000_000L;

    @TempDir
    Path state;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void aPooledCreateAnswersLikeAColdOneAndNoPooledSandboxOutlivesItsDaemon() throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        // the first create of the default spec starts the pool; a size the pool does not hold is always cold
        String cold = api.createSandbox(Map.of("disk_limit_mib", 1024));
        api.createSandbox();
        awaitPoolFull(api);

        String pooled = api.createSandbox();

        assertTrue(Files.isDirectory(state.resolve("sandboxes").resolve(pooled).resolve("pooled")),
                "the create was served by the pool");
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(cold).resolve("pooled")));
        for (String id : List.of(cold, pooled)) {
            assertEquals(id + "\n", Api.sh(api, id, "hostname"), "the hostname is the sandbox's own id");
            assertEquals("", Api.sh(api, id, "ls -A /work"), "a fresh workspace");
            assertEquals(204, api.raw("PUT", files(id, "/work/note"), id.getBytes(StandardCharsets.UTF_8)).statusCode());
            assertEquals(id, new String(api.raw("GET", files(id, "/work/note"), null).body(), StandardCharsets.UTF_8));
        }
        assertEquals(Api.sh(api, cold, "df -k /work | tail -1 | awk '{print $2}'"),
                Api.sh(api, pooled, "df -k /work | tail -1 | awk '{print $2}'"), "the default workspace size");
        assertEquals(Api.sh(api, cold, "id"), Api.sh(api, pooled, "id"), "the same sandbox user");
        JsonNode coldInfo = api.get("/v1/sandboxes/" + cold).body();
        JsonNode pooledInfo = api.get("/v1/sandboxes/" + pooled).body();
        assertEquals("running", pooledInfo.get("status").asText());
        assertEquals(fieldNames(coldInfo), fieldNames(pooledInfo), "the same shape: " + coldInfo + " / " + pooledInfo);
        assertNotEquals(coldInfo.get("pid"), pooledInfo.get("pid"));
        assertEquals("512", pidsMax(coldInfo.get("pid").asLong()));
        assertEquals("512", pidsMax(pooledInfo.get("pid").asLong()), "the default pids limit holds the pooled sandbox too");
        assertEquals(204, api.delete("/v1/sandboxes/" + pooled).status());
        assertEquals(List.of(), StateDirLeftovers.processes(state.resolve("sandboxes").resolve(pooled)),
                "a deleted pooled sandbox leaves no process");

        assertEquals(0, first.stop(), "SIGTERM stops the daemon cleanly");
        assertEquals(List.of(), StateDirLeftovers.processes(state.resolve("procbox-pool")),
                "a clean stop ends the pooled sandboxes");
        assertTrue(Files.exists(Path.of("/proc", coldInfo.get("pid").asText())), "the sandboxes handed out run on");

        Daemon second = daemons.start(state);
        api = new Api(second.baseUrl(), second.adminToken());
        api.delete("/v1/sandboxes/" + api.createSandbox());
        awaitPoolFull(api);
        second.kill9();
        assertFalse(StateDirLeftovers.processes(state.resolve("procbox-pool")).isEmpty(),
                "a killed daemon's pooled sandboxes run on until the next start");

        Daemon third = daemons.start(state);
        assertEquals(List.of(), StateDirLeftovers.processes(state.resolve("procbox-pool")),
                "the next daemon ended them as it started");
        api = new Api(third.baseUrl(), third.adminToken());
        assertEquals(cold, Api.sh(api, cold, "cat /work/note"), "the cold sandbox was re-adopted");
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        names.sort(null);
        return names;
    }

    /** The {@code pids.max} of the pids cgroup the host process {@code pid} is in (cgroup v1 or v2); fails if there is none. */
    private static String pidsMax(long pid) throws IOException {
        return HostCgroups.read(HostCgroups.pidsCgroup(pid), "pids.max");
    }

    private static String files(String id, String path) {
        return "/v1/sandboxes/" + id + "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8);
    }

    /** Waits until procbox reports its pool full (its {@code sandbox_pool} detail). */
    private static void awaitPoolFull(Api api) throws Exception {
        long deadline = System.nanoTime() + WAIT_NANOS;
        String pool = "";
        while (System.nanoTime() < deadline) {
            for (JsonNode b : api.get("/v1/backends").body()) {
                if (b.get("name").asText().equals("procbox")) {
                    pool = b.path("details").path("sandbox_pool").asText();
                }
            }
            if (pool.endsWith(", 2 ready")) {
                return;
            }
            Thread.sleep(20);
        }
        fail("procbox's pool did not fill within 60 s: " + pool);
    }
}
