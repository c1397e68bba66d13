package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Core's limits against the assembled daemon with procbox, configured small through the deploy
 * folder ({@code io.vivarium.core.internal.SandboxManager.cfg}: {@code max_sandboxes=2},
 * {@code branch_timeout_secs=1}): a plain create past {@code max_sandboxes} is a 503 with
 * Retry-After like a fork, and a branch past its timeout is a 504 that leaves no tag and the parent
 * running. The branch is made slow with core's test point {@code branch.staged} stalled 3 s
 * ({@code -Dvivarium.test.stall.at}), after the capture and before the deadline is checked.
 */
class CoreLimitsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        Path cfg = Files.write(dir.resolve("core.cfg"), List.of("max_sandboxes=2", "branch_timeout_secs=1"));
        deploy.deploy(cfg, "io.vivarium.core.internal.SandboxManager.cfg");
        daemon = daemons.start(dir.resolve("state"), deploy.daemonArgs(),
                List.of("-Dvivarium.test.stall.at=branch.staged:3000"));
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        // FileInstall applies the deploy folder's .cfg a moment after the daemon first answers: wait for its effect
        DeployFolder.await("max_sandboxes=2 to be applied", Duration.ofSeconds(30), () -> {
            List<Integer> statuses = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                statuses.add(api.post("/v1/sandboxes", Map.of()).status());
            }
            api.deleteAllSandboxes();
            return statuses.equals(List.of(201, 201, 503)) ? true : null;
        });
    }

    @AfterEach
    void deleteAll() throws Exception {
        api.deleteAllSandboxes();
    }

    private static String create() throws Exception {
        Api.Response r = api.post("/v1/sandboxes", Map.of());
        assertEquals(201, r.status(), String.valueOf(r.body()));
        return r.body().get("id").asText();
    }

    @Test
    void aPlainCreatePastMaxSandboxesIsA503WithRetryAfter() throws Exception {
        assertEquals(201, api.post("/v1/snapshots", Map.of("tag", "one")).status());
        create();
        create();
        for (Api.Response full : List.of(api.post("/v1/sandboxes", Map.of()),
                api.post("/v1/sandboxes", Map.of("snapshot_tag", "one")))) {
            assertEquals(503, full.status(), String.valueOf(full.body()));
            assertTrue(full.error().contains("max_sandboxes"), full.error());
            assertTrue(full.raw().headers().firstValue("Retry-After").isPresent(), "a capacity refusal says when to retry");
        }
        assertEquals(2, api.get("/v1/sandboxes").body().size(), "nothing was started");
        api.deleteAllSandboxes();
        create();
        assertEquals(204, api.delete("/v1/snapshots/one").status());
    }

    @Test
    void aBranchPastItsTimeoutIsA504AndLeavesNoTag() throws Exception {
        String parent = create();
        Api.sh(api, parent, "echo mine > /work/mine.txt");
        Api.Response late = api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "late"));
        assertEquals(504, late.status(), String.valueOf(late.body()));
        assertFalse(late.error().isBlank());
        assertFalse(api.get("/v1/snapshots").body().toString().contains("\"late\""), "no tag is left");
        assertFalse(Files.exists(daemon.stateDir().resolve("snapshots/default/late")), "no file is left");
        assertEquals("mine\n", Api.sh(api, parent, "cat /work/mine.txt"), "the parent keeps running");
    }
}
