package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Sandboxes outlive the daemon: a clean stop and a kill -9 both end in re-adoption. */
class RestartIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path state;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void sandboxesSurviveACleanStopAndAKill9AndDeadOnesAreReportedFailed() throws Exception {
        String survivor;
        String victim;
        long victimPid;
        String bgPid;
        {
            Daemon first = daemons.start(state, List.of());
            Api api = new Api(first.baseUrl(), first.adminToken());
            survivor = api.createSandbox();
            victim = api.createSandbox();
            victimPid = api.get("/v1/sandboxes/" + victim).body().get("pid").asLong();
            api.exec(survivor, "sh", "-c", "sleep 600 & echo $! > /work/bg.pid");
            bgPid = Api.sh(api, survivor, "cat /work/bg.pid").strip();
            assertEquals(0, first.stop(), "SIGTERM stops the daemon cleanly");
        }
        assertTrue(Files.exists(Path.of("/proc", String.valueOf(victimPid))), "sandboxes keep running without the daemon");
        assertEquals(0, Bounded.run(Duration.ofSeconds(30), "kill", "-9", String.valueOf(victimPid)).exitCode());

        {
            Daemon second = daemons.start(state, List.of());
            Api api = new Api(second.baseUrl(), second.adminToken());
            assertEquals("running", api.get("/v1/sandboxes/" + survivor).body().get("status").asText());
            assertEquals("alive", Api.sh(api, survivor, "kill -0 " + bgPid + " && echo alive").strip(),
                    "a process started before the restart is still running");
            var failed = api.get("/v1/sandboxes/" + victim);
            assertEquals("failed", failed.body().get("status").asText());
            assertTrue(failed.body().get("reason").asText().contains("gone"), failed.body().toString());
            assertEquals(409, api.post("/v1/sandboxes/" + victim + "/exec", "{\"args\":[\"true\"]}").status());
            assertEquals(204, api.delete("/v1/sandboxes/" + victim).status());
            second.kill9();
        }

        {
            Daemon third = daemons.start(state, List.of());
            Api api = new Api(third.baseUrl(), third.adminToken());
            assertEquals(1, api.get("/v1/sandboxes").body().size());
            assertEquals("alive", Api.sh(api, survivor, "kill -0 " + bgPid + " && echo alive").strip(),
                    "still running after a kill -9 of the daemon");
            assertEquals(204, api.delete("/v1/sandboxes/" + survivor).status());
        }
    }

    @Test
    void afterAKill9ASandboxThatDiedMeanwhileIsFailedWithItsReasonAndTheOtherIsReadopted() throws Exception {
        Daemon first = daemons.start(state);
        Api api = new Api(first.baseUrl(), first.adminToken());
        String live = api.createSandbox();
        String dead = api.createSandbox();
        long livePid = pid(api, live);
        long deadPid = pid(api, dead);
        api.exec(live, "sh", "-c", "sleep 600 > /dev/null 2>&1 &");
        long background = HostProcesses.theDescendant(livePid, "sleep 600");

        first.kill9();
        assertFalse(ProcessHandle.of(first.pid()).isPresent(), "the daemon's JVM is gone");
        assertTrue(ProcessHandle.of(livePid).isPresent(), "sandboxes keep running without the daemon");
        ProcessHandle deadInit = ProcessHandle.of(deadPid).orElseThrow();
        deadInit.destroyForcibly();
        deadInit.onExit().get(10, TimeUnit.SECONDS);

        Daemon second = daemons.start(state);
        api = new Api(second.baseUrl(), second.adminToken());
        JsonNode failed = api.get("/v1/sandboxes/" + dead).body();
        assertEquals("failed", failed.get("status").asText(), failed.toString());
        String reason = failed.get("reason").asText();
        assertTrue(reason.contains("init process " + deadPid + " is gone") && reason.contains("re-adopted"), reason);

        JsonNode adopted = api.get("/v1/sandboxes/" + live).body();
        assertEquals("running", adopted.get("status").asText(), adopted.toString());
        assertEquals(livePid, adopted.get("pid").asLong(), "the same init process, re-adopted");
        assertEquals("hi\n", api.exec(live, "echo", "hi").get("stdout").asText());
        assertTrue(HostProcesses.runs(background, "sleep 600"), "the background process still runs");
        assertEquals(List.of(background), HostProcesses.descendants(livePid, "sleep 600"));

        assertEquals(204, api.delete("/v1/sandboxes/" + dead).status());
        assertEquals(204, api.delete("/v1/sandboxes/" + live).status());
        assertEquals(0, api.get("/v1/sandboxes").body().size());
        assertFalse(ProcessHandle.of(livePid).isPresent(), "deleting it ends its processes");
        assertEquals(List.of(), StateDirLeftovers.processes(state));
    }

    private static long pid(Api api, String id) throws Exception {
        return api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
    }
}
