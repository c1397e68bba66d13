package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gvisor feature end to end: enabled on a running daemon, a container created, exec'd into,
 * its files written and read, its workspace's changes listed; then a daemon restart that re-adopts
 * it with a background process still running, and reports a second one, killed meanwhile, as
 * failed; a bundle update that re-adopts it again; then delete, which leaves no runsc sandbox and no files.
 */
class GvisorIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String GVISOR_BUNDLE = "io.vivarium.backend-gvisor";

    @TempDir
    Path state;

    @BeforeAll
    static void needsRunscAndTheRootfs() {
        String missing = Host.gvisorMissing();
        Assumptions.assumeTrue(missing == null, missing);
    }

    @Test
    void aContainerLivesThroughCreateExecFilesChangesAndARestartUntilDeleted() throws Exception {
        Daemon first = daemons.start(state, List.of());
        Api api = new Api(first.baseUrl(), first.adminToken());
        assertEquals(null, backend(api), "gvisor is not enabled by default");
        Api.Response enabled = api.post("/v1/features/gvisor/enable", "");
        assertEquals(200, enabled.status(), enabled.raw().body());

        JsonNode gvisor = awaitBackend(api);
        assertTrue(gvisor.get("available").asBoolean(), gvisor.toString());
        JsonNode details = gvisor.get("details");
        assertTrue(details.get("platform").asText().startsWith("ptrace: ") && details.get("platform").asText().contains("kvm"),
                details.toString());
        assertTrue(details.get("isolation").asText().contains("runsc version"), details.toString());
        assertTrue(details.get("images").asText().contains("checkpoint"), details.toString());

        String id = api.createSandbox(Map.of("backend", "gvisor", "memory_limit_mib", 256));
        String dead = api.createSandbox(Map.of("backend", "gvisor"));
        JsonNode info = api.get("/v1/sandboxes/" + id).body();
        assertEquals("running", info.get("status").asText(), info.toString());
        long sandboxPid = info.get("pid").asLong();
        assertTrue(HostProcesses.cmdline(sandboxPid).contains("runsc"), HostProcesses.cmdline(sandboxPid));

        assertEquals("65534\n", Api.sh(api, id, "id -u"), "commands run as the sandbox user");
        assertEquals("3.11\n", Api.sh(api, id, "python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'"),
                "the built root filesystem's python3");
        assertEquals(204, api.sendBytes("PUT", "/v1/sandboxes/" + id + "/files?path=/work/in.txt",
                "from the host\n".getBytes()).status());
        assertEquals("from the host\n", Api.sh(api, id, "cat /work/in.txt"));

        Api.sh(api, id, "mkdir -p /work/src && echo 1 > /work/src/a && echo 2 > /work/src/b");
        JsonNode base = ok(api.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of("/work/src"))));
        assertEquals(2, base.get("files").asInt(), base.toString());
        Api.sh(api, id, "echo changed > /work/src/a && rm /work/src/b && echo new > /work/src/c");
        JsonNode changes = ok(api.post("/v1/sandboxes/" + id + "/changes", ""));
        assertEquals("[\"/work/src/c\"]", changes.get("added").toString(), changes.toString());
        assertEquals("[\"/work/src/a\"]", changes.get("modified").toString(), changes.toString());
        assertEquals("[\"/work/src/b\"]", changes.get("deleted").toString(), changes.toString());

        String bg = Api.sh(api, id, "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        long deadPid = api.get("/v1/sandboxes/" + dead).body().get("pid").asLong();
        assertEquals(0, first.stop(), "SIGTERM stops the daemon cleanly");
        assertTrue(HostProcesses.cmdline(sandboxPid).contains("runsc"), "the container outlives the daemon");
        ProcessHandle deadSandbox = ProcessHandle.of(deadPid).orElseThrow();
        deadSandbox.destroyForcibly();
        deadSandbox.onExit().get(10, TimeUnit.SECONDS);

        Daemon second = daemons.start(state, List.of());
        api = new Api(second.baseUrl(), second.adminToken());
        JsonNode adopted = api.get("/v1/sandboxes/" + id).body();
        assertEquals("running", adopted.get("status").asText(), adopted.toString());
        assertEquals(sandboxPid, adopted.get("pid").asLong(), "the same sandbox, re-adopted");
        assertEquals("alive\n", Api.sh(api, id, "kill -0 " + bg + " && echo alive"), "the background process survives a restart");
        JsonNode failed = api.get("/v1/sandboxes/" + dead).body();
        assertEquals("failed", failed.get("status").asText(), failed.toString());
        assertTrue(failed.get("reason").asText().contains("is gone"), failed.toString());

        byte[] update = BundleJars.withVersion(BundleJars.shipped("backend-gvisor"), "0.1.0.update1");
        Api.Response updated = api.sendBytes("PUT", "/v1/plugins/" + GVISOR_BUNDLE, update);
        assertEquals(200, updated.status(), updated.raw().body());
        awaitVersion(api, "0.1.0.update1");
        assertEquals("alive\n", Api.sh(api, id, "kill -0 " + bg + " && echo alive"),
                "the background process survives a bundle update");
        assertEquals(sandboxPid, api.get("/v1/sandboxes/" + id).body().get("pid").asLong(), "the same sandbox");

        Path dir = second.stateDir().resolve("sandboxes").resolve(id);
        assertTrue(Files.exists(dir.resolve("bundle").resolve("config.json")), "the OCI bundle the backend wrote");
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        assertEquals(204, api.delete("/v1/sandboxes/" + dead).status());
        assertEquals("", HostProcesses.cmdline(sandboxPid), "delete ends the container's sandbox");
        assertFalse(Files.exists(dir), "delete removes the container's files");
    }

    @Test
    void limitsItCannotApplyAreRefusedWithTheReason() throws Exception {
        Daemon daemon = daemons.start(state, List.of("--features", "core,api-v1,gvisor"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        assertNotNull(awaitBackend(api));
        // refused by the backend (501), or by core before it when the capabilities say so (400)
        Api.Response pids = api.post("/v1/sandboxes", Map.of("backend", "gvisor", "pids_limit", 64));
        assertTrue(pids.status() == 400 || pids.status() == 501, pids.raw().body());
        assertTrue(pids.body().get("error").asText().contains("pids_limit"), pids.raw().body());
    }

    private static JsonNode ok(Api.Response r) {
        assertEquals(200, r.status(), r.raw().body());
        return r.body();
    }

    private static JsonNode backend(Api api) throws Exception {
        for (JsonNode b : api.get("/v1/backends").body()) {
            if (b.get("name").asText().equals("gvisor")) {
                return b;
            }
        }
        return null;
    }

    private static void awaitVersion(Api api, String version) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        JsonNode b = backend(api);
        while (b == null || !version.equals(b.get("version").asText())) {
            assertTrue(System.nanoTime() < deadline, "gvisor " + version + " is not listed within 30 s: " + b);
            Thread.sleep(50);
            b = backend(api);
        }
    }

    private static JsonNode awaitBackend(Api api) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        JsonNode b = backend(api);
        while (b == null) {
            assertTrue(System.nanoTime() < deadline, "gvisor is not listed within 30 s");
            Thread.sleep(50);
            b = backend(api);
        }
        return b;
    }
}
