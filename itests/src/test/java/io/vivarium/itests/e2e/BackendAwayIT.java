package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
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
 * A request for a sandbox whose backend is away (its bundle stopped, as in an upgrade) for longer
 * than core's patience ({@code backend_wait_millis}, 5 s by default) waits that long, then answers
 * 503 with Retry-After, never a 500, and loses nothing: once the bundle is back the same sandbox
 * (same init process, its background process still running) answers again. The operator stops and
 * starts procbox at the daemon's Gogo console ({@code serve --console}), so the backend stays away
 * exactly until the test brings it back.
 */
class BackendAwayIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String PROCBOX = "io.vivarium.backend-procbox";
    /** Core's default {@code backend_wait_millis}. */
    private static final Duration BACKEND_WAIT = Duration.ofMillis(5000);
    private static final Duration PATIENCE = Duration.ofSeconds(60);
    private static final String BACKGROUND = "sleep 600";

    @TempDir
    Path dir;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void aRequestWaitsForItsBackendThenAnswers503WithRetryAfterAndTheSandboxAnswersOnceTheBackendIsBack()
            throws Exception {
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--console"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        api.exec(id, "sh", "-c", BACKGROUND + " > /dev/null 2>&1 &");
        long init = api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
        long background = HostProcesses.theDescendant(init, BACKGROUND);
        long bundle = bundleId(api, PROCBOX);

        daemon.console("felix:stop " + bundle);
        DeployFolder.await("procbox to leave /v1/backends", PATIENCE, () -> backends(api).contains("procbox") ? null : true);
        // for backend_wait_millis after procbox left, a guest call still reaches the instance it left; then calls wait
        DeployFolder.await("an exec to wait for procbox, then give up", PATIENCE, () -> {
            long start = System.nanoTime();
            Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true")));
            if (r.status() == 200) {
                return null;
            }
            assertWaitedThenUnavailable(r, start);
            return r;
        });
        long start = System.nanoTime();
        assertWaitedThenUnavailable(api.delete("/v1/sandboxes/" + id), start);
        JsonNode kept = api.get("/v1/sandboxes/" + id).body();
        assertEquals(id, kept.get("id").asText(), "the sandbox is still there while its backend is away: " + kept);

        daemon.console("felix:start " + bundle);
        DeployFolder.await("procbox back in /v1/backends", PATIENCE, () -> backends(api).contains("procbox") ? true : null);
        assertEquals("back\n", Api.sh(api, id, "echo back"));
        JsonNode again = api.get("/v1/sandboxes/" + id).body();
        assertEquals("running", again.get("status").asText(), again.toString());
        assertEquals(init, again.get("pid").asLong(), "the same init process, re-adopted");
        assertTrue(HostProcesses.runs(background, BACKGROUND), "its background process runs on");
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }

    /** A 503 with Retry-After and an error, answered no sooner than core's patience after {@code startNanos}. */
    private static void assertWaitedThenUnavailable(Api.Response r, long startNanos) {
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        assertEquals(503, r.status(), r.raw().body());
        assertNotNull(r.error(), r.raw().body());
        assertTrue(r.raw().headers().firstValue("Retry-After").isPresent(), "says when to retry: " + r.raw().headers());
        assertTrue(took.compareTo(BACKEND_WAIT) >= 0, "answered after " + took.toMillis() + " ms, before core's patience");
    }

    private static long bundleId(Api api, String symbolicName) throws Exception {
        for (JsonNode p : api.get("/v1/plugins").body()) {
            if (p.get("symbolic_name").asText().equals(symbolicName)) {
                return p.get("id").asLong();
            }
        }
        throw new AssertionError(symbolicName + " is not in /v1/plugins");
    }

    private static List<String> backends(Api api) throws Exception {
        Api.Response r = api.get("/v1/backends");
        assertEquals(200, r.status(), r.raw().body());
        List<String> names = new ArrayList<>();
        r.body().forEach(b -> names.add(b.get("name").asText()));
        return names;
    }
}
