package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code POST /v1/sandboxes/{id}/eval} on procbox: state kept in the sandbox's warm interpreter,
 * exceptions and printed output as results, a timeout that replaces the interpreter, a child forked
 * from a branch whose interpreter starts fresh (procbox captures files only) and says so, and the status
 * codes (400, 403, 404, 409 while another eval runs). 409 for a paused or stopped sandbox takes the
 * exec path (procbox can neither), 501 and 422 are covered by core's and the agent's own tests.
 */
class EvalIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Api admin;
    static Api user;
    static Api otherTenant;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "procbox's sandboxes take the host's "
                + "/usr, which has no python3 here (apt-get install python3)");
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "acme-admin acme admin\nacme-user acme user\nglobex-admin globex admin\n");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "acme-admin");
        user = admin.as("acme-user");
        otherTenant = admin.as("globex-admin");
        id = admin.createSandbox();
    }

    private static Api.Response eval(Api api, Object body) throws Exception {
        return api.post("/v1/sandboxes/" + id + "/eval", body);
    }

    private static JsonNode ok(String code) throws Exception {
        return ok(Map.of("code", code));
    }

    private static JsonNode ok(Map<String, ?> body) throws Exception {
        Api.Response r = eval(admin, body);
        assertEquals(200, r.status(), () -> body + " -> " + r.body());
        return r.body();
    }

    @Test
    void stateOutputAndExceptionsComeBackInTheSeedsShape() throws Exception {
        JsonNode set = ok("x = 41");
        Map<String, String> fields = fields(set);
        assertTrue(Set.of("true", "false").contains(fields.remove("fresh_interpreter")), set.toString());
        assertEquals(Map.of("result", "null", "error", "null", "exit_code", "0", "stdout", "\"\""), fields);
        JsonNode got = ok("print('in the sandbox')\nx + 1");
        assertEquals("42", got.get("result").asText());
        assertFalse(got.get("fresh_interpreter").asBoolean(), "the interpreter x was set in: " + got);
        assertEquals("in the sandbox\n", got.get("stdout").asText());
        assertEquals(0, got.get("exit_code").asInt());
        JsonNode cwd = ok("import os\nos.getcwd(), os.getuid()");
        assertEquals("('/work', 65534)", cwd.get("result").asText(), "in the workspace, as the sandbox user");
        JsonNode raised = ok("{}['missing']");
        assertEquals(1, raised.get("exit_code").asInt());
        assertTrue(raised.get("result").isNull());
        assertTrue(raised.get("error").asText().startsWith("Traceback (most recent call last):")
                && raised.get("error").asText().endsWith("KeyError: 'missing'\n"), raised.toString());
        assertEquals("42", ok("x + 1").get("result").asText(), "an exception leaves the interpreter as it was");
        String version = ok("import platform\nplatform.python_version()").get("result").asText();
        Api.Response ping = admin.post("/v1/sandboxes/" + id + "/ping", "");
        assertEquals(200, ping.status(), String.valueOf(ping.body()));
        assertEquals(version, "'" + ping.body().path("python_version").asText(null) + "'",
                "ping names the interpreter once an eval started it: " + ping.body());
    }

    @Test
    void aRunawayEvalIsStoppedAtItsTimeoutAndTheNextStartsFresh() throws Exception {
        ok("kept = True");
        long start = System.nanoTime();
        JsonNode r = ok(Map.of("code", "while True: pass", "timeout_secs", 1));
        // the behaviour under test: the eval's own 1 s timeout ends it, long before the request's (a generous bound)
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "answered at its timeout, not the request's");
        assertEquals(124, r.get("exit_code").asInt(), r.toString());
        assertTrue(r.get("error").asText().contains("its state (variables, imports) is gone"), r.toString());
        JsonNode next = ok("'kept' in globals()");
        assertEquals("False", next.get("result").asText(), "a fresh interpreter");
        assertTrue(next.get("fresh_interpreter").asBoolean(), "and the answer says so: " + next);
    }

    @Test
    void secondEvalWhileOneRunsIs409AndExecAndPingAreServedMeanwhile() throws Exception {
        Api.sh(admin, id, "rm -f /work/slow-started");
        CompletableFuture<Api.Response> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return eval(admin, Map.of("code", "open('/work/slow-started', 'w').close()\nimport time\ntime.sleep(60)",
                        "timeout_secs", 3));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!Api.sh(admin, id, "test -e /work/slow-started && echo yes || true").contains("yes")) {
            assertTrue(System.nanoTime() < deadline && !slow.isDone(), "the slow eval never started: " + (slow.isDone() ? slow.get().body() : ""));
        }
        Api.Response busy = eval(admin, Map.of("code", "1"));
        assertEquals(409, busy.status(), busy.body().toString());
        assertTrue(busy.error().contains("one at a time"), busy.error());
        assertEquals(200, admin.post("/v1/sandboxes/" + id + "/ping", null).status(), "ping is served meanwhile");
        assertEquals(124, Bounded.get(slow, Duration.ofSeconds(60), "the slow eval answers").body().get("exit_code").asInt(),
                "the slow one timed out");
    }

    @Test
    void aChildForkedFromABranchStartsAFreshInterpreterAndSaysSo() throws Exception {
        String parent = admin.createSandbox();
        List<String> children = new ArrayList<>();
        try {
            assertEquals("41", evalIn(parent, "inherited = 41\ninherited").get("result").asText());
            Api.sh(admin, parent, "echo kept > /work/file-from-parent");
            Api.Response branch = admin.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "eval-fork"));
            assertEquals(201, branch.status(), String.valueOf(branch.body()));
            assertEquals("files", branch.body().get("captures").asText(), "procbox captures files only: " + branch.body());
            children.addAll(admin.fork("eval-fork", 1));
            String child = children.get(0);

            JsonNode first = evalIn(child, "'inherited' in globals(), open('/work/file-from-parent').read()");
            assertEquals("(False, 'kept\\n')", first.get("result").asText(), "files, not the interpreter: " + first);
            assertTrue(first.get("fresh_interpreter").asBoolean(), "the child's first eval says so: " + first);
            assertFalse(evalIn(child, "1").get("fresh_interpreter").asBoolean(), "its second runs where the first did");
            JsonNode inParent = evalIn(parent, "inherited");
            assertEquals("41", inParent.get("result").asText(), "the parent's interpreter lives on");
            assertFalse(inParent.get("fresh_interpreter").asBoolean(), inParent.toString());
        } finally {
            for (String child : children) {
                admin.delete("/v1/sandboxes/" + child);
            }
            admin.delete("/v1/sandboxes/" + parent);
            admin.delete("/v1/snapshots/eval-fork");
        }
    }

    private static JsonNode evalIn(String sandbox, String code) throws Exception {
        Api.Response r = admin.post("/v1/sandboxes/" + sandbox + "/eval", Map.of("code", code));
        assertEquals(200, r.status(), () -> code + " -> " + r.body());
        return r.body();
    }

    @Test
    void badInputIs400AndTheCallerMustBeAnAdminOfTheTenant() throws Exception {
        Map<String, Object> tooBig = Map.of("code", "#".repeat((512 << 10) + 1));
        Map<String, Object> unknown = new HashMap<>(Map.of("code", "1", "language", "python"));
        for (Object bad : List.of(Map.of(), Map.of("code", List.of("1")), Map.of("code", "1", "timeout_secs", 0),
                Map.of("code", "1", "timeout_secs", 3601), Map.of("code", "1", "timeout_secs", "soon"), tooBig, unknown, "[1]")) {
            Api.Response r = eval(admin.outsideTheContract(), bad);  // bodies the document refuses
            assertEquals(400, r.status(), () -> String.valueOf(bad).substring(0, Math.min(80, String.valueOf(bad).length())) + " -> " + r.body());
            assertTrue(r.error() != null && !r.error().isEmpty());
        }
        assertEquals(400, admin.outsideTheContract().send("POST", "/v1/sandboxes/" + id + "/eval", null).status(), "no body");
        assertEquals(413, eval(admin.outsideTheContract(), Map.of("code", "#".repeat(1 << 20))).status(), "a body past the edge's 1 MiB");
        assertEquals(404, admin.post("/v1/sandboxes/sb-nope/eval", Map.of("code", "1")).status());
        assertEquals(404, eval(otherTenant, Map.of("code", "1")).status());
        assertEquals(403, eval(user, Map.of("code", "1")).status());
    }

    @Test
    void backendsSayProcboxEvaluates() throws Exception {
        JsonNode backends = admin.get("/v1/backends").body();
        boolean found = false;
        for (JsonNode b : backends) {
            if (b.get("name").asText().equals("procbox")) {
                assertTrue(Api.can(b, "eval"), b.toString());
                found = true;
            }
        }
        assertTrue(found, backends.toString());
    }

    private static Map<String, String> fields(JsonNode body) {
        Map<String, String> m = new HashMap<>();
        body.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().toString()));
        return m;
    }
}
