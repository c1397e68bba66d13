package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Eval on QEMU guests end to end (TCG): a VM of the default image (no Python) answers an eval with a
 * 422; a VM of the {@code python} image keeps its interpreter's state, returns tracebacks, replaces
 * an interpreter that timed out, and its ping then names the interpreter's version; children forked
 * from a branch of it inherit the interpreter (a variable, an imported module) with its memory, and
 * the parent evaluates on after the branch.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class QemuEvalIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,qemu,storage-reflink,fingerprint-sha256");

    @TempDir
    static Path work;
    static Api api;
    static String parent;

    @BeforeAll
    static void daemonWithQemu() throws Exception {
        for (String image : List.of("default", "python")) {
            String missing = Host.qemuMissing(image);
            Assumptions.assumeTrue(missing == null, missing);
        }
        Daemon daemon = daemons.start(daemons.xfsStateDir(work), FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @Test
    @Order(1)
    void theDefaultImageHasNoPythonSoAnEvalIsA422() throws Exception {
        String id = api.createSandbox(Map.of("backend", "qemu"));
        try {
            Api.Response r = eval(id, "1 + 1");
            assertEquals(422, r.status(), String.valueOf(r.body()));
            assertTrue(r.error().contains("python3"), r.error());
            assertNull(ping(id).get("python_version"), "no interpreter, no version");
        } finally {
            assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        }
    }

    @Test
    @Order(2)
    void thePythonImageEvaluatesInAWarmInterpreter() throws Exception {
        parent = api.createSandbox(Map.of("backend", "qemu", "image", "python"));
        assertNull(ping(parent).get("python_version"), "no version before the first eval starts the interpreter");
        JsonNode first = ok(parent, "x = 41");
        assertTrue(first.get("result").isNull(), "an assignment has no value");
        assertTrue(first.get("fresh_interpreter").asBoolean(), "the first eval starts the interpreter: " + first);
        JsonNode next = ok(parent, "print('hi')\nx + 1");
        assertEquals("42", next.get("result").asText(), next.toString());
        assertFalse(next.get("fresh_interpreter").asBoolean(), next.toString());
        assertEquals("hi\n", next.get("stdout").asText(), next.toString());
        JsonNode raised = ok(parent, "1/0");
        assertEquals(1, raised.get("exit_code").asInt(), raised.toString());
        assertTrue(raised.get("error").asText().endsWith("ZeroDivisionError: division by zero\n"), raised.toString());
        assertEquals("'3.11.2'", ok(parent, "import platform; platform.python_version()").get("result").asText());
        assertEquals("3.11.2", ping(parent).path("python_version").asText(null), "ping names the interpreter once it ran");

        JsonNode timedOut = ok(parent, Map.of("code", "while True: pass", "timeout_secs", 1));
        assertEquals(124, timedOut.get("exit_code").asInt(), timedOut.toString());
        assertTrue(timedOut.get("error").asText().contains("a fresh one started"), timedOut.toString());
        JsonNode after = ok(parent, "'x' in globals()");
        assertEquals("False", after.get("result").asText(), "the fresh interpreter's state is new");
        assertTrue(after.get("fresh_interpreter").asBoolean(), "and the answer says so: " + after);
    }

    @Test
    @Order(3)
    void childrenOfABranchInheritTheInterpreter() throws Exception {
        Assumptions.assumeTrue(parent != null, "the python VM did not start");
        ok(parent, "import decimal, os, random, sys; x = 41");
        Api.Response branch = api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "py"));
        assertEquals(201, branch.status(), String.valueOf(branch.body()));
        assertEquals("files+memory", branch.body().get("captures").asText(), branch.body().toString());
        assertEquals("42", ok(parent, "x + 1").get("result").asText(), "the parent evaluates on after the branch");

        List<String> children = api.fork("py", 2);
        for (String child : children) {
            assertEquals("3.11.2", ping(child).path("python_version").asText(null), "the child's agent knows its interpreter");
            JsonNode inherited = ok(child, "'decimal' in sys.modules");
            assertEquals("True", inherited.get("result").asText(),
                    "a module imported before the branch is imported in " + child + " (sys too: no import here)");
            assertFalse(inherited.get("fresh_interpreter").asBoolean(),
                    "the child's first eval runs in the parent's interpreter, and says so: " + inherited);
            assertEquals("42", ok(child, "x + 1").get("result").asText(), "the parent's variable lives in " + child);
            ok(child, "x = '" + child + "'");
        }
        List<String> pseudo = new ArrayList<>();
        List<String> entropy = new ArrayList<>();
        for (String child : children) {
            assertEquals("'" + child + "'", ok(child, "x").get("result").asText(), "each child's interpreter is its own");
            pseudo.add(ok(child, "random.random()").get("result").asText());
            entropy.add(ok(child, "os.urandom(16).hex()").get("result").asText());
        }
        assertEquals(pseudo.get(0), pseudo.get(1), "random's generator state is inherited too (eval.md says to reseed)");
        assertNotEquals(entropy.get(0), entropy.get(1), "the kernel's entropy is each child's own");
        assertEquals("41", ok(parent, "x").get("result").asText());
        for (String child : children) {
            assertEquals(204, api.delete("/v1/sandboxes/" + child).status());
        }
        assertEquals(204, api.delete("/v1/sandboxes/" + parent).status());
        assertFalse(api.get("/v1/sandboxes/" + parent).status() == 200, "the parent is gone");
    }

    private static Api.Response eval(String id, Object body) throws Exception {
        return api.post("/v1/sandboxes/" + id + "/eval", body instanceof String code ? Map.of("code", code) : body);
    }

    private static JsonNode ok(String id, Object body) throws Exception {
        Api.Response r = eval(id, body);
        assertEquals(200, r.status(), String.valueOf(r.body()));
        return r.body();
    }

    private static JsonNode ping(String id) throws Exception {
        Api.Response r = api.post("/v1/sandboxes/" + id + "/ping", "");
        assertEquals(200, r.status(), String.valueOf(r.body()));
        return r.body();
    }
}
