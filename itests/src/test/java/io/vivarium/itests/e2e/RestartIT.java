package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sandboxes outlive the daemon: a clean stop and a kill -9 both end in re-adoption. */
class RestartIT {
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
        try (Daemon first = new Daemon(state, List.of()).start()) {
            Api api = new Api(first.baseUrl(), first.adminToken());
            survivor = api.createSandbox();
            victim = api.createSandbox();
            victimPid = api.get("/v1/sandboxes/" + victim).body().get("pid").asLong();
            api.exec(survivor, "sh", "-c", "sleep 600 & echo $! > /work/bg.pid");
            bgPid = Api.sh(api, survivor, "cat /work/bg.pid").strip();
            assertEquals(0, first.stop(), "SIGTERM stops the daemon cleanly");
        }
        assertTrue(Files.exists(Path.of("/proc", String.valueOf(victimPid))), "sandboxes keep running without the daemon");
        new ProcessBuilder("kill", "-9", String.valueOf(victimPid)).start().waitFor();

        try (Daemon second = new Daemon(state, List.of()).start()) {
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

        try (Daemon third = new Daemon(state, List.of()).start()) {
            Api api = new Api(third.baseUrl(), third.adminToken());
            assertEquals(1, api.get("/v1/sandboxes").body().size());
            assertEquals("alive", Api.sh(api, survivor, "kill -0 " + bgPid + " && echo alive").strip(),
                    "still running after a kill -9 of the daemon");
            assertEquals(204, api.delete("/v1/sandboxes/" + survivor).status());
        }
    }
}
