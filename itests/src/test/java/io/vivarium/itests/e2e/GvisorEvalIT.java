package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Eval and pause on the gvisor backend through the HTTP API: the capabilities say so, the warm
 * interpreter keeps state, an exception comes back in {@code error}, ping names the interpreter, a
 * paused container answers 409 to an eval and keeps its interpreter's state through a resume. The
 * timeout, the stdout cap and a root filesystem without Python (422) are covered by the backend's
 * GvisorEvalAndPauseTest; the shared status codes by EvalIT.
 */
class GvisorEvalIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path state;

    @Test
    void evalKeepsStateThroughAPauseAndPingNamesTheInterpreter() throws Exception {
        String missing = Host.gvisorMissing();
        Assumptions.assumeTrue(missing == null, missing);
        Daemon daemon = daemons.start(state, List.of("--features", "core,api-v1,gvisor"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        JsonNode gvisor = awaitGvisor(api);
        assertTrue(Api.can(gvisor, "eval") && Api.can(gvisor, "pause"), gvisor.toString());

        String id = api.createSandbox(Map.of("backend", "gvisor"));
        JsonNode set = eval(api, id, "x = 41");
        assertTrue(set.get("result").isNull() && set.get("error").isNull() && set.get("exit_code").asInt() == 0,
                set.toString());
        JsonNode got = eval(api, id, "print('in gvisor')\nx + 1");
        assertEquals("42", got.get("result").asText(), got.toString());
        assertEquals("in gvisor\n", got.get("stdout").asText(), got.toString());
        JsonNode raised = eval(api, id, "1 / 0");
        assertEquals(1, raised.get("exit_code").asInt(), raised.toString());
        assertTrue(raised.get("error").asText().endsWith("ZeroDivisionError: division by zero\n"), raised.toString());

        String version = eval(api, id, "import platform\nplatform.python_version()").get("result").asText();
        JsonNode ping = api.post("/v1/sandboxes/" + id + "/ping", "").body();
        assertEquals(version, "'" + ping.path("python_version").asText(null) + "'", ping.toString());

        Api.Response paused = api.post("/v1/sandboxes/" + id + "/pause", "");
        assertEquals(200, paused.status(), paused.raw().body());
        assertEquals("paused", paused.body().get("status").asText(), paused.raw().body());
        Api.Response refused = api.post("/v1/sandboxes/" + id + "/eval", Map.of("code", "x"));
        assertEquals(409, refused.status(), refused.raw().body());
        assertTrue(refused.error().contains("resume"), refused.error());
        Api.Response resumed = api.post("/v1/sandboxes/" + id + "/resume", "");
        assertEquals("running", resumed.body().get("status").asText(), resumed.raw().body());
        assertEquals("41", eval(api, id, "x").get("result").asText(), "the interpreter's state outlives a pause");

        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }

    private static JsonNode eval(Api api, String id, String code) throws Exception {
        Api.Response r = api.post("/v1/sandboxes/" + id + "/eval", Map.of("code", code));
        assertEquals(200, r.status(), () -> code + " -> " + r.raw().body());
        return r.body();
    }

    private static JsonNode awaitGvisor(Api api) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            for (JsonNode b : api.get("/v1/backends").body()) {
                if (b.get("name").asText().equals("gvisor") && b.get("available").asBoolean()) {
                    return b;
                }
            }
            assertTrue(System.nanoTime() < deadline, "gvisor is not available within 30 s");
            Thread.sleep(50);
        }
    }
}
