package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox cannot take the host down with it: a fork bomb stops at its pids limit and filling
 * its workspace gives it ENOSPC, while another sandbox and the daemon keep answering. The limit is
 * seen where the kernel keeps it: the cgroup the sandbox's init is in ({@link HostCgroups}, cgroup
 * v2 or v1), whose absence fails the test.
 */
class SandboxLimitsIT {
    private static final int PIDS_LIMIT = 64;
    private static final int DISK_LIMIT_MIB = 64;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path state;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(state);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }


    @Test
    void limitsOutOfRangeAreRefusedWithTheFieldNamed() throws Exception {
        Api.Response pids = api.post("/v1/sandboxes", Map.of("pids_limit", 1));
        assertEquals(400, pids.status(), pids.raw().body());
        assertTrue(pids.error().contains("pids_limit"), pids.error());
        Api.Response disk = api.outsideTheContract().post("/v1/sandboxes", Map.of("disk_limit_mib", -5));
        assertEquals(400, disk.status(), disk.raw().body());
        assertTrue(disk.error().contains("disk_limit_mib"), disk.error());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aForkBombAndAFullDiskStayInsideTheirSandbox() throws Exception {
        Api.Response created = api.post("/v1/sandboxes",
                Map.of("pids_limit", PIDS_LIMIT, "disk_limit_mib", DISK_LIMIT_MIB));
        assertEquals(201, created.status(), created.raw().body());
        String victim = created.body().get("id").asText();
        String bystander = api.createSandbox();
        Path pids = HostCgroups.pidsCgroup(api.get("/v1/sandboxes/" + victim).body().get("pid").asLong());
        assertEquals(String.valueOf(PIDS_LIMIT), HostCgroups.read(pids, "pids.max"), "the sandbox's own cgroup: " + pids);

        JsonNode fill = api.exec(victim, "dd", "if=/dev/zero", "of=/work/fill", "bs=1M", "count=" + 4 * DISK_LIMIT_MIB);
        assertNotEquals(0, fill.get("exit_code").asInt(), fill.toString());
        assertTrue(fill.get("stderr").asText().contains("No space left on device"), fill.toString());
        Path image = state.resolve("sandboxes").resolve(victim).resolve("workspace.ext4");
        assertTrue(Files.size(image) <= DISK_LIMIT_MIB << 20, "the workspace never grows past its limit on the host");

        // the classic bomb; the exec's timeout then kills its process group
        CompletableFuture<Api.Response> bomb = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes/" + victim + "/exec",
                        Map.of("args", List.of("/bin/sh", "-c", "b() { b | b & }; b; sleep 15"), "timeout_secs", 10));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        do {
            assertEquals(200, api.get("/healthz").status(), "the daemon answers while the bomb runs");
            assertEquals("ok\n", api.exec(bystander, "echo", "ok").get("stdout").asText(),
                    "another sandbox answers while the bomb runs");
            assertEquals(0, api.exec(bystander, "sh", "-c", "echo data > /work/f").get("exit_code").asInt(),
                    "and can still write its workspace");
            long tasks = Long.parseLong(HostCgroups.read(pids, "pids.current"));
            assertTrue(tasks <= PIDS_LIMIT, "the bomb stays within its limit: " + tasks);
        } while (!bomb.isDone());
        Api.Response bombed = bomb.get(60, TimeUnit.SECONDS);
        assertEquals(200, bombed.status(), bombed.raw().body());
        assertTrue(bombed.body().get("timed_out").asBoolean(), bombed.body().toString());
        assertTrue(HostCgroups.forksRefused(pids) > 0, "the bomb reached the limit, whose cgroup refused its forks");

        assertEquals(204, api.delete("/v1/sandboxes/" + victim).status(), "the bombed sandbox can be deleted");
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(victim)), "with its workspace image");
        assertEquals("ok\n", api.exec(bystander, "echo", "ok").get("stdout").asText());
    }
}
