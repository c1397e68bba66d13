package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Create, exec and delete process sandboxes through the assembled daemon. */
class SandboxLifecycleIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path state;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(state, List.of());
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @Test
    void createExecDelete() throws Exception {
        Api.Response created = api.post("/v1/sandboxes", Map.of("backend", "procbox"));
        assertEquals(201, created.status(), created.raw().body());
        String id = created.body().get("id").asText();
        assertEquals("procbox", created.body().get("backend").asText());
        assertEquals("running", created.body().get("status").asText());
        assertTrue(created.body().get("pid").asLong() > 0);

        JsonNode r = api.exec(id, "echo", "hello world");
        assertEquals("hello world\n", r.get("stdout").asText());
        assertEquals(0, r.get("exit_code").asInt());
        assertFalse(r.get("timed_out").asBoolean());
        assertFalse(r.get("truncated").asBoolean());

        assertEquals(200, api.get("/v1/sandboxes/" + id).status());
        assertTrue(api.get("/v1/sandboxes").body().toString().contains(id));
        assertEquals(200, api.post("/v1/sandboxes/" + id + "/ping", "").status());

        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        Api.Response gone = api.get("/v1/sandboxes/" + id);
        assertEquals(404, gone.status());
        assertTrue(gone.error().contains(id));
        assertEquals(404, api.delete("/v1/sandboxes/" + id).status());
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
    }

    @Test
    void oneSandboxShowsWhatItUsesAndBackendsHowTheyRun() throws Exception {
        JsonNode procbox = api.get("/v1/backends").body().get(0);
        assertTrue(procbox.get("details").get("isolation").asText().startsWith("bubblewrap "), procbox.toString());
        assertEquals("vivarium-agent", procbox.get("details").get("agent").asText());
        assertTrue(procbox.get("details").has("memory_cgroup"), procbox.toString());

        String id = api.createSandbox();
        Api.sh(api, id, "head -c 100000 /dev/zero > /work/zeros; sleep 300 &");
        JsonNode usage = api.get("/v1/sandboxes/" + id).body().get("usage");
        assertEquals(100000, usage.get("disk_bytes").asLong(), usage.toString());
        assertTrue(usage.get("resident_memory_bytes").asLong() > 0, usage.toString());
        assertTrue(usage.get("cpu_seconds").asDouble() >= 0, usage.toString());
        assertFalse(api.get("/v1/sandboxes").body().get(0).has("usage"), "a listing does not measure every sandbox");
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }

    @Test
    void aBackgroundProcessSurvivesBetweenExecsAndFilesPersist() throws Exception {
        String id = api.createSandbox();
        JsonNode started = api.exec(id, "sh", "-c", "sleep 300 & echo $! > /work/bg.pid; echo started");
        assertEquals("started\n", started.get("stdout").asText());
        assertTrue(started.get("duration_ms").asLong() < 5000, "exec must not wait for the background child");
        String pid = Api.sh(api, id, "cat /work/bg.pid").strip();
        assertEquals("alive", Api.sh(api, id, "kill -0 " + pid + " && echo alive").strip());
        // the background child may still be the forked shell that is about to exec sleep
        awaitCommandLine(id, "sleep 300");
        assertTrue(Files.exists(api.procboxWorkspace(id).resolve("bg.pid")), "the host reaches the workspace");
    }

    @Test
    void isolation() throws Exception {
        String id = api.createSandbox();
        assertEquals("65534", Api.sh(api, id, "id -u").strip(), "runs as an unprivileged user");
        assertEquals("1", Api.sh(api, id, "grep NoNewPrivs /proc/self/status | cut -f2").strip());
        assertEquals("lo", Api.sh(api, id, "ls /sys/class/net 2>/dev/null || awk -F: 'NR>2{print $1}' /proc/net/dev").strip(),
                "no network but loopback");
        assertTrue(Api.sh(api, id, "touch /usr/x 2>&1; echo $?").strip().endsWith("1"), "/usr is read-only");
        String other = api.createSandbox();
        api.exec(id, "sh", "-c", "echo secret > /work/mine; sleep 300 >/dev/null 2>&1 &");
        assertEquals("absent", Api.sh(api, other, "test -e /work/mine && echo present || echo absent").strip());
        awaitCommandLine(id, "sleep 300");
        assertFalse(commandLines(other).contains("sleep 300"), "another sandbox's process is visible: " + commandLines(other));
    }

    /** Waits until the sandbox sees a process running {@code argv}: the check below can see what it looks for. */
    private static void awaitCommandLine(String id, String argv) throws Exception {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!commandLines(id).contains(argv)) {
            assertTrue(System.nanoTime() < deadline, "no '" + argv + "' in sandbox " + id + ": " + commandLines(id));
        }
    }

    /** Every process's full argv as the sandbox sees it in its /proc, one per line (ps -o comm drops arguments). */
    private static List<String> commandLines(String id) throws Exception {
        String script = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\" 2>/dev/null; echo; done";
        return Api.sh(api, id, script).lines().map(String::strip).toList();
    }

    @Test
    void argvEnvCwdAndStdinArePassedUninterpreted() throws Exception {
        String id = api.createSandbox();
        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "printf '%s|' \"$@\"; echo; echo $GREETING; pwd; cat", "sh", "$(id)", "a b", "-x"),
                "env", Map.of("GREETING", "hi there"),
                "cwd", "/tmp",
                "stdin", "from stdin"));
        assertEquals(200, r.status(), r.raw().body());
        assertEquals("$(id)|a b|-x|\nhi there\n/tmp\nfrom stdin", r.body().get("stdout").asText());
        Api.Response failing = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("sh", "-c", "echo oops >&2; exit 3")));
        assertEquals(3, failing.body().get("exit_code").asInt());
        assertEquals("oops\n", failing.body().get("stderr").asText());
        Api.Response missing = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("no-such-program")));
        assertEquals(200, missing.status());
        assertEquals(127, missing.body().get("exit_code").asInt(), missing.raw().body());
    }

    @Test
    void aSandboxProcessKillingEveryProcessOfItsUserCannotKillTheSandbox() throws Exception {
        String id = api.createSandbox();
        api.exec(id, "sh", "-c", "sleep 600 > /dev/null 2>&1 &");

        Api.Response killed = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("kill", "-9", "-1")));

        assertEquals(503, killed.status(), "the agent that ran it went with it: " + killed.raw().body());
        assertTrue(killed.raw().headers().firstValue("Retry-After").isPresent(), killed.raw().headers().toString());
        // the agent's root supervisor starts a new worker on the same socket at once
        long deadline = System.nanoTime() + 10_000_000_000L;
        Api.Response again;
        while ((again = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("ps", "-eo", "user,args"))))
                .status() == 503 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(200, again.status(), again.raw().body());
        String processes = again.body().get("stdout").asText();
        assertFalse(processes.contains("sleep 600"), "kill -9 -1 reached the sandbox user's processes: " + processes);
        assertTrue(processes.lines().anyMatch(l -> l.startsWith("root") && l.contains("vivarium-agent")), processes);
        assertEquals("running", api.get("/v1/sandboxes/" + id).body().get("status").asText());
    }

    @Test
    void timeoutKillsTheWholeProcessGroup() throws Exception {
        String id = api.createSandbox();
        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "sleep 600 & sleep 600; echo never"), "timeout_secs", 1));
        assertEquals(200, r.status(), r.raw().body());
        assertTrue(r.body().get("timed_out").asBoolean());
        assertTrue(r.body().get("duration_ms").asLong() < 10_000);
        assertEquals("", r.body().get("stdout").asText());
        assertFalse(commandLines(id).contains("sleep 600"), "both sleeps are killed: " + commandLines(id));
        assertEquals("ok\n", Api.sh(api, id, "echo ok"), "the sandbox itself survives");
    }

    @Test
    void outputIsCappedAndTruncationReported() throws Exception {
        String id = api.createSandbox();
        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "head -c 50000000 /dev/zero | tr '\\0' x; echo done >&2"), "max_output_bytes", 1000));
        assertEquals(200, r.status(), r.raw().body());
        assertTrue(r.body().get("truncated").asBoolean());
        assertEquals(1000, r.body().get("stdout").asText().length());
        assertEquals("done\n", r.body().get("stderr").asText());
        assertEquals(0, r.body().get("exit_code").asInt());
    }

    @Test
    void backendsAreListedWithVersionAndCapabilities() throws Exception {
        Api.Response r = api.get("/v1/backends");
        assertEquals(200, r.status());
        JsonNode procbox = r.body().get(0);
        assertEquals("procbox", procbox.get("name").asText());
        assertEquals("io.vivarium.backend-procbox", procbox.get("bundle").asText());
        assertTrue(procbox.get("available").asBoolean());
        assertTrue(Api.can(procbox, "exec"), procbox.toString());
        assertFalse(procbox.get("machine").asBoolean(), procbox.toString());
        String shipped = PluginsIT.plugins(api).get("io.vivarium.backend-procbox").get("version").asText();
        assertTrue(shipped.startsWith("0.1.0"), shipped);
        assertEquals(shipped, procbox.get("version").asText(), "the version of the bundle that provides it");
    }

    @Test
    void aRootDaemonWalksWorkspacesThroughTheNosymfollowView() throws Exception {
        Assumptions.assumeTrue(Host.isRoot(), "only a root daemon can mount the nosymfollow walk view");
        JsonNode procbox = api.get("/v1/backends").body().get(0);
        assertTrue(procbox.get("available").asBoolean());
        assertFalse(procbox.has("reason"), "a root daemon must not be degraded: " + procbox.get("reason"));
    }

    @Test
    void memoryLimitIsEnforcedWhereTheHostHasAMemoryCgroup() throws Exception {
        Assumptions.assumeTrue(Host.hasMemoryCgroup(), Host.MEMORY_CGROUP_REASON);
        assertTrue(Api.can(procbox(api), "memory_limit"),
                "the host has a writable memory cgroup but procbox does not offer memory limits");
        Api.Response r = api.post("/v1/sandboxes", Map.of("memory_limit_mib", 64));
        assertEquals(201, r.status(), r.raw().body());
        assertEquals(64, r.body().get("memory_limit_mib").asInt());
        String id = r.body().get("id").asText();
        JsonNode small = api.exec(id, "dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=1");
        assertEquals(0, small.get("exit_code").asInt(), small.toString());
        JsonNode big = api.exec(id, "dd", "if=/dev/zero", "of=/dev/null", "bs=300M", "count=1");
        assertEquals(137, big.get("exit_code").asInt(), "a 300 MiB buffer under a 64 MiB limit is OOM-killed: " + big);
    }

    /**
     * A daemon whose procbox sees no memory controller, on any host: its {@code cgroup_root} is an
     * empty directory (a {@code .cfg} in its deploy folder). It does not list memory_limit and
     * refuses memory_limit_mib with a 400 that names the field, and creates sandboxes without it.
     */
    @Test
    void memoryLimitIsRefusedClearlyWhereTheBackendCannotEnforceIt(@TempDir Path dir) throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        Path noCgroups = Files.createDirectories(dir.resolve("no-cgroups"));
        Path cfg = Files.writeString(dir.resolve("procbox.cfg"), "cgroup_root=" + noCgroups + "\n");
        deploy.deploy(cfg, "io.vivarium.backend.procbox.cfg");
        Daemon without = daemons.start(dir.resolve("state"), deploy.daemonArgs());
        Api noMemory = new Api(without.baseUrl(), without.adminToken());
        JsonNode procbox = DeployFolder.await("procbox to see no memory cgroup under " + noCgroups, Duration.ofSeconds(30), () -> {
            for (JsonNode b : noMemory.get("/v1/backends").body()) {  // none listed while procbox restarts with the key
                if (b.get("name").asText().equals("procbox") && b.path("details").path("memory_cgroup").asText().startsWith("none")) {
                    return b;
                }
            }
            return null;
        });
        assertTrue(procbox.path("details").path("memory_cgroup").asText().contains(noCgroups.toString()), procbox.toString());
        assertFalse(Api.can(procbox, "memory_limit"), "not offered: " + procbox);

        Api.Response r = noMemory.post("/v1/sandboxes", Map.of("memory_limit_mib", 64));
        assertEquals(400, r.status(), r.raw().body());
        assertTrue(r.error().contains("memory_limit_mib"), r.error());
        assertEquals(201, noMemory.post("/v1/sandboxes", Map.of()).status(), "a sandbox without the limit is still made");
    }

    private static JsonNode procbox(Api api) throws Exception {
        JsonNode procbox = api.get("/v1/backends").body().get(0);
        assertEquals("procbox", procbox.get("name").asText());
        return procbox;
    }
}
