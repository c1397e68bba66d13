package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Idle tiers on a real daemon (docs/tiers.md): a sandbox idle for its {@code pause_after_secs} is
 * paused (warm) and its next request resumes it, three times in a row with its files, a volume and a
 * background process intact (procbox, gVisor and a QEMU VM where the host runs them); a sandbox a request paused stays
 * paused until touched; branch of a warm sandbox is 409 "touch first"; a {@code kill -9} of the
 * daemon keeps the tier; the idle policy is bounded by the operator's. A QEMU VM and a gVisor
 * sandbox go cold and come back three times in a row, and a daemon killed while one goes cold
 * finds it as it was or wholly cold.
 */
class SandboxTiersIT {
    /**
     * A counter that runs while the sandbox runs, left behind by an exec: written beside and renamed,
     * so that a read never finds the file truncated and not yet written (gVisor's gofer made that
     * window wide enough to hit in CI).
     */
    private static final String COUNTER = "(i=0; while true; do i=$((i+1)); echo $i > /work/count.new; "
            + "mv /work/count.new /work/count; sleep 0.1; done) > /dev/null 2>&1 &";

    /** The operator's bound: a create may ask for less, never more. */
    private static final int OPERATOR_SECS = 30;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;
    static boolean gvisor;
    static boolean qemu;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        gvisor = Host.gvisorMissing() == null;
        qemu = Host.qemuMissing("default") == null;
        String features = "core,api-v1,procbox,metrics,fingerprint-sha256,storage-reflink" + (gvisor ? ",gvisor" : "")
                + (qemu ? ",qemu" : "");
        daemon = daemons.start(dir.resolve("state"), List.of("--features", features),
                List.of("-Dvivarium.idle.pause.after.secs=" + OPERATOR_SECS, "-Dvivarium.default.backend=procbox"));
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @AfterEach
    void deleteSandboxes() throws Exception {
        api.deleteAllSandboxes();
    }

    private static JsonNode info(Api through, String id) throws Exception {
        return Api.expect(200, through.get("/v1/sandboxes/" + id));
    }

    /** Waits (bounded) until the sandbox is demoted: paused, tier warm. */
    private static void awaitWarm(Api through, String id) throws Exception {
        JsonNode now = through.awaitTier(id, "warm", Duration.ofSeconds(20));
        assertEquals("paused", now.get("status").asText(), now.toString());
    }

    private static double demotions(Api through) throws Exception {
        String text = new String(through.raw("GET", "/metrics", null).body(), java.nio.charset.StandardCharsets.UTF_8);
        return text.lines().filter(l -> l.startsWith("vivarium_demotions_total{to=\"warm\"}"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst().orElse(-1);
    }

    @Test
    void anIdleSandboxIsPausedAndItsNextRequestResumesItThreeTimesWithNothingLost() throws Exception {
        threeCycles("procbox");
    }

    @Test
    void soIsAGvisorSandbox() throws Exception {
        Assumptions.assumeTrue(gvisor, Host.gvisorMissing());
        threeCycles("gvisor");
    }

    @Test
    void soIsAQemuVm() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        threeCycles("qemu");
    }

    /**
     * Three demote/resume cycles of a sandbox of {@code backend} with a volume, each followed by a
     * pause and resume by requests, then its delete
     * (which, for a VM demoted again meanwhile, runs it to freeze the volume).
     */
    private static void threeCycles(String backend) throws Exception {
        String volume = "tiers-" + backend;
        Api.expect(201, api.post("/v1/volumes", Map.of("name", volume, "size_mib", 16)));
        JsonNode created = Api.expect(201, api.post("/v1/sandboxes", Map.of("backend", backend,
                "idle", Map.of("pause_after_secs", 1), "volumes", List.of(Map.of("name", volume, "mount_path", "/v")))));
        String id = created.get("id").asText();
        assertEquals(1, created.get("idle").get("pause_after_secs").asInt(), created.toString());
        assertEquals("hot", created.get("tier").asText());
        Api.sh(api, id, "echo kept > /work/f; echo vol > /v/g");
        // a counter that runs while the sandbox runs, left behind by an exec (a command the API runs
        // would keep the sandbox busy): it stops while paused and goes on after
        Api.sh(api, id, COUNTER);
        double before = demotions(api);

        for (int cycle = 1; cycle <= 3; cycle++) {
            awaitWarm(api, id);
            String frozen = Api.sh(api, id, "cat /work/count").strip(); // this request resumed it
            assertEquals("hot", info(api, id).get("tier").asText(), "cycle " + cycle + ": a request resumed it");
            assertEquals("kept\nvol\n", Api.sh(api, id, "cat /work/f /v/g"), "cycle " + cycle + ": files and volume kept");
            Thread.sleep(400);
            String later = Api.sh(api, id, "cat /work/count").strip();
            assertTrue(Integer.parseInt(later) > Integer.parseInt(frozen),
                    "cycle " + cycle + ": the background process runs on after the resume (" + frozen + " then " + later + ")");

            // and paused and resumed by requests, the same
            Api.expect(200, api.post("/v1/sandboxes/" + id + "/pause", null));
            Api.expect(200, api.post("/v1/sandboxes/" + id + "/resume", null));
            assertEquals("kept\nvol\n", Api.sh(api, id, "cat /work/f /v/g"), "cycle " + cycle + ": kept across a pause and resume");
            String resumed = Api.sh(api, id, "cat /work/count").strip();
            Thread.sleep(400);
            assertTrue(Integer.parseInt(Api.sh(api, id, "cat /work/count").strip()) > Integer.parseInt(resumed),
                    "cycle " + cycle + ": the background process runs on after a resume by request");
        }
        assertTrue(demotions(api) >= before + 3, "three demotions counted: " + demotions(api));
        Api.sh(api, id, "echo last >> /v/g");
        awaitWarm(api, id);
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        String reader = Api.expect(201, api.post("/v1/sandboxes", Map.of("backend", "procbox",
                "volumes", List.of(Map.of("name", volume, "mount_path", "/v", "read_only", true))))).get("id").asText();
        assertEquals("vol\nlast\n", Api.sh(api, reader, "cat /v/g"), "what it wrote before its delete, demoted, is on the volume");
        Api.expect(204, api.delete("/v1/sandboxes/" + reader));
        Api.expect(204, api.delete("/v1/volumes/" + volume));
    }

    @Test
    void aQemuVmGoesColdWithItsQemuGoneAndComesBackThreeTimesWithNothingLost() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        // read-only: a VM with a writable volume disk stays warm
        coldCycles("qemu", true);
    }

    @Test
    void soDoesAGvisorSandboxWithItsSandboxProcessGone() throws Exception {
        Assumptions.assumeTrue(gvisor, Host.gvisorMissing());
        coldCycles("gvisor", false);
    }

    /**
     * Three cold spells in a row of a sandbox of {@code backend} with a volume (mounted read-only or
     * not) and a background process: each time what ran is gone, and the next request finds it all
     * as it was.
     */
    private static void coldCycles(String backend, boolean readOnlyVolume) throws Exception {
        String volume = "tiers-cold-" + backend;
        Api.expect(201, api.post("/v1/volumes", Map.of("name", volume, "size_mib", 16)));
        String filler = Api.expect(201, api.post("/v1/sandboxes", Map.of("backend", "procbox",
                "volumes", List.of(Map.of("name", volume, "mount_path", "/v"))))).get("id").asText();
        Api.sh(api, filler, "echo vol > /v/g");
        Api.expect(204, api.delete("/v1/sandboxes/" + filler));
        JsonNode created = Api.expect(201, api.post("/v1/sandboxes", Map.of("backend", backend, "memory_limit_mib", 256,
                "idle", Map.of("pause_after_secs", 1, "cold_after_secs", 3),
                "volumes", List.of(Map.of("name", volume, "mount_path", "/v", "read_only", readOnlyVolume)))));
        String id = created.get("id").asText();
        assertEquals(3, created.get("idle").get("cold_after_secs").asInt(), created.toString());
        Api.sh(api, id, "echo kept > /work/f");
        Api.sh(api, id, COUNTER);
        for (int cycle = 1; cycle <= 3; cycle++) {
            JsonNode cold = api.awaitTier(id, "cold", Duration.ofSeconds(60));
            assertEquals("paused", cold.get("status").asText(), cold.toString());
            long pid = cold.get("pid").asLong();
            // a process killed by SIGKILL gives its memory back as it exits, a moment after the kill
            Bounded.until(Duration.ofSeconds(10), "cycle " + cycle + ": what ran (pid " + pid + ") is gone, its memory with it",
                    () -> !holdsMemoryNow(pid));
            assertTrue(holdsSavedState(id), "cycle " + cycle + ": its state is on disk");
            String before = Api.sh(api, id, "cat /work/count").strip(); // this request woke it
            assertFalse(holdsSavedState(id), "cycle " + cycle + ": the saved state is deleted once the wake is recorded");
            assertEquals("hot", info(api, id).get("tier").asText(), "cycle " + cycle);
            assertEquals("kept\nvol\n", Api.sh(api, id, "cat /work/f /v/g"), "cycle " + cycle + ": its files and volume kept");
            Thread.sleep(400);
            String later = Api.sh(api, id, "cat /work/count").strip();
            assertTrue(Integer.parseInt(later) > Integer.parseInt(before),
                    "cycle " + cycle + ": the background process runs on (" + before + " then " + later + ")");
        }
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        Api.expect(204, api.delete("/v1/volumes/" + volume));
    }

    /** Whether sandbox {@code id}'s directory holds a saved state: QEMU's migration stream, or gVisor's checkpoint. */
    private static boolean holdsSavedState(String id) {
        Path dir = daemon.stateDir().resolve("sandboxes").resolve(id);
        return Files.exists(dir.resolve("cold.state")) || Files.exists(dir.resolve("cold"));
    }

    private static boolean holdsMemoryNow(long pid) {
        try {
            return holdsMemory(pid);
        } catch (IOException goneAsItWasRead) {
            return false;
        }
    }

    /** Whether the host process {@code pid} holds memory: not gone, nor a zombie its reaper has yet to collect. */
    private static boolean holdsMemory(long pid) throws IOException {
        Path status = Path.of("/proc/" + pid + "/status");
        return Files.exists(status) && Files.readString(status).contains("VmRSS");
    }

    @Test
    void aDaemonKilledWhileAVmGoesColdFindsItAsItWasOrWhollyCold() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        coldCrashes("qemu");
    }

    @Test
    void soDoesOneKilledWhileAGvisorSandboxGoesCold() throws Exception {
        Assumptions.assumeTrue(gvisor, Host.gvisorMissing());
        coldCrashes("gvisor");
    }

    /**
     * A daemon halted after the state was saved but before it was recorded finds the sandbox warm
     * (paused) as it was; after the record but before the release, cold, what still ran ended by the
     * next daemon. Either way its next request brings it back whole.
     */
    private static void coldCrashes(String backend) throws Exception {
        List<String> features = List.of("--features", "core,api-v1,fingerprint-sha256," + backend);
        for (var point : Map.of("tiers.saved", "warm", "tiers.cold.recorded", "cold").entrySet()) {
            Path state = dir.resolve("cold-crash-" + backend + "-" + point.getKey());
            Daemon first = daemons.start(state, features, List.of("-Dvivarium.test.halt.at=" + point.getKey()));
            Api a = new Api(first.baseUrl(), first.adminToken());
            String id = Api.expect(201, a.post("/v1/sandboxes", Map.of("backend", backend, "memory_limit_mib", 256,
                    "idle", Map.of("pause_after_secs", 3, "cold_after_secs", 5)))).get("id").asText();
            Api.sh(a, id, "echo kept > /work/f");
            long pid = info(a, id).get("pid").asLong();
            assertTrue(first.awaitExit(Duration.ofSeconds(60)), "the daemon halted at " + point.getKey());

            Daemon second = daemons.start(state, features);
            Api b = new Api(second.baseUrl(), second.adminToken());
            JsonNode found = info(b, id);
            assertEquals(point.getValue(), found.get("tier").asText(), point.getKey() + ": " + found);
            if (point.getValue().equals("cold")) {
                assertFalse(holdsMemory(pid), "what the release had not ended (pid " + pid + ") was ended");
            }
            assertEquals("kept\n", Api.sh(b, id, "cat /work/f"), point.getKey() + ": its next request brings it back whole");
            assertEquals("hot", info(b, id).get("tier").asText());
            Api.expect(204, b.delete("/v1/sandboxes/" + id));
            second.stop();
        }
    }

    @Test
    void aRequestThroughAnExposedPortResumesAnIdleSandbox() throws Exception {
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/nft")),
                "needs nftables' nft for sandbox networks (apt-get install nftables)");
        String id = Api.expect(201, api.post("/v1/sandboxes", Map.of("idle", Map.of("pause_after_secs", 1),
                "network", Map.of("mode", "egress", "allow", List.of())))).get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        Api.expect(204, api.sendBytes("PUT", sb + "/files?path=/work/server.py",
                SandboxPortsIT.SERVER.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        // started by an exec, not as a command of the API (which would keep the sandbox hot)
        Api.sh(api, id, "python3 /work/server.py " + SandboxPortsIT.PORT + " > /dev/null 2>&1 &"
                + " for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "
                + SandboxPortsIT.PORT + "), timeout=1)' 2>/dev/null && break; sleep 0.05; done");
        Api.expect(201, api.post(sb + "/ports", Map.of("port", SandboxPortsIT.PORT)));
        awaitWarm(api, id);

        HttpResponse<byte[]> through = api.raw("GET", sb + "/ports/" + SandboxPortsIT.PORT + "/woken", null);
        assertEquals(200, through.statusCode(), new String(through.body(), java.nio.charset.StandardCharsets.UTF_8));
        assertTrue(new String(through.body(), java.nio.charset.StandardCharsets.UTF_8).contains("\"path\": \"/woken\""));
        assertEquals("hot", info(api, id).get("tier").asText(), "the request through the port resumed it");

        // an open WebSocket through the port is activity all along, not only as it opens
        try (var socket = new SandboxPortsIT.Echo(daemon.baseUrl().replaceFirst("^http", "ws") + sb + "/ports/"
                + SandboxPortsIT.PORT + "/ws", daemon.adminToken())) {
            assertEquals("echo open", socket.exchange("open"));
            Thread.sleep(2500); // past its pause_after_secs of 1, the demotion look run twice
            assertEquals("hot", info(api, id).get("tier").asText(), "an open WebSocket through its port keeps it hot");
            assertEquals("echo still", socket.exchange("still"));
        }
        awaitWarm(api, id);
    }

    @Test
    void aSandboxRunningACommandOfTheApiIsNotIdle() throws Exception {
        String id = Api.expect(201, api.post("/v1/sandboxes", Map.of("idle", Map.of("pause_after_secs", 1)))).get("id").asText();
        String command = Api.expect(201, api.post("/v1/sandboxes/" + id + "/commands",
                Map.of("args", List.of("sleep", "4")))).get("id").asText();
        Thread.sleep(2500);
        assertEquals("hot", info(api, id).get("tier").asText(), "a command runs in it: it is not idle");
        Api.expect(200, api.post("/v1/sandboxes/" + id + "/commands/" + command + "/wait?timeout_secs=30", null));
        awaitWarm(api, id);
    }

    @Test
    void aSandboxARequestPausedStaysPausedUntilTouchedAndBranchSaysTouchFirst() throws Exception {
        String id = api.createSandbox();
        Api.expect(200, api.post("/v1/sandboxes/" + id + "/pause", null));
        JsonNode paused = info(api, id);
        assertEquals("warm", paused.get("tier").asText(), paused.toString());
        assertEquals(409, api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))).status(),
                "a pause by request is not undone by the next request");
        Api.Response branch = api.post("/v1/sandboxes/" + id + "/branch", Map.of("tag", "from-warm"));
        assertEquals(409, branch.status(), branch.raw().body());
        assertTrue(branch.error().contains("touch"), branch.error());
        Api.expect(204, api.post("/v1/sandboxes/" + id + "/touch", null));
        assertEquals("hot", info(api, id).get("tier").asText(), "touch promotes");
        assertEquals("ok\n", Api.sh(api, id, "echo ok"));
    }

    @Test
    void theIdlePolicyIsBoundedByTheOperatorsAndColdIsRefused() throws Exception {
        JsonNode byDefault = Api.expect(201, api.post("/v1/sandboxes", Map.of()));
        assertEquals(OPERATOR_SECS, byDefault.get("idle").get("pause_after_secs").asInt(), "the operator's default");
        for (Map<String, Object> idle : List.of(Map.<String, Object>of("pause_after_secs", OPERATOR_SECS + 1),
                Map.<String, Object>of("pause_after_secs", 5, "cold_after_secs", 60))) {
            Api.Response r = api.post("/v1/sandboxes", Map.of("idle", idle));
            assertEquals(400, r.status(), idle + " " + r.raw().body());
        }
        Api.Response zero = api.outsideTheContract().post("/v1/sandboxes", Map.of("idle", Map.of("pause_after_secs", 0)));
        assertEquals(400, zero.status(), zero.raw().body());
    }

    @Test
    void aKill9OfTheDaemonKeepsTheTierAndTheNextRequestStillResumes() throws Exception {
        Path state = dir.resolve("restart-state");
        Daemon first = daemons.start(state, List.of());
        Api a = new Api(first.baseUrl(), first.adminToken());
        String id = Api.expect(201, a.post("/v1/sandboxes", Map.of("idle", Map.of("pause_after_secs", 1)))).get("id").asText();
        Api.sh(a, id, "echo before > /work/f");
        awaitWarm(a, id);
        first.kill9();

        Daemon second = daemons.start(state, List.of());
        Api b = new Api(second.baseUrl(), second.adminToken());
        JsonNode after = info(b, id);
        assertEquals("warm", after.get("tier").asText(), "the tier outlives the daemon: " + after);
        assertEquals("before\n", Api.sh(b, id, "cat /work/f"), "and a request resumes it");
        assertEquals("hot", info(b, id).get("tier").asText());
        Api.expect(204, b.delete("/v1/sandboxes/" + id));
    }
}
