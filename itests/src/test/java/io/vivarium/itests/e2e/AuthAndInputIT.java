package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Tokens, roles, tenants and bad input, through a daemon started with an operator's token file. */
class AuthAndInputIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;
    static Api user;
    static Api otherTenant;
    static Api anonymous;

    @BeforeAll
    static void start() throws Exception {
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "# operator's file\nseed-style-token\nacme-admin acme admin\nacme-user acme user\n"
                + "globex-admin globex admin\nthe-operator default operator\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "acme-admin");
        user = admin.as("acme-user");
        otherTenant = admin.as("globex-admin");
        anonymous = admin.as(null);
    }

    @Test
    void healthzNeedsNoTokenEverythingElseDoes() throws Exception {
        Api.Response h = anonymous.get("/healthz");
        assertEquals(200, h.status());
        assertEquals(true, h.body().get("ok").asBoolean());
        for (String path : List.of("/version", "/v1/backends", "/v1/sandboxes")) {
            Api.Response r = anonymous.get(path);
            assertEquals(401, r.status(), path);
            assertNotNull(r.error(), path);
        }
        for (String path : List.of("/v1/nope", "/anything")) {
            Api.Response r = anonymous.outsideTheContract().get(path);  // no such route: still 401 first
            assertEquals(401, r.status(), path);
            assertNotNull(r.error(), path);
        }
        assertEquals(401, admin.as("wrong").get("/v1/sandboxes").status());
        assertEquals(401, anonymous.send("GET", "/v1/sandboxes", null).status());
        assertEquals(200, admin.as("seed-style-token").get("/v1/sandboxes").status(), "a bare token line is an admin");
        assertFalse(Files.exists(daemon.stateDir().resolve("tokens")), "no token is generated when a file is given");
    }

    private static void assertFalse(boolean b, String message) {
        assertTrue(!b, message);
    }

    @Test
    void version() throws Exception {
        Api.Response r = admin.get("/version");
        assertEquals(200, r.status());
        assertEquals("0.1.0", r.body().get("version").asText());
        assertEquals("v1", r.body().get("api").asText());
    }

    @Test
    void rolesAndTenants() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String id = user.createSandbox();
        Api.Response forbidden = user.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true")));
        assertEquals(403, forbidden.status());
        assertTrue(forbidden.error().contains("admin"), forbidden.error());
        assertEquals(200, admin.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))).status(),
                "an admin of the same tenant reaches it");

        assertEquals(404, otherTenant.get("/v1/sandboxes/" + id).status());
        assertEquals(404, otherTenant.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))).status());
        assertEquals(404, otherTenant.delete("/v1/sandboxes/" + id).status());
        assertTrue(otherTenant.get("/v1/sandboxes").body().isEmpty());
        assertEquals("acme", user.get("/v1/sandboxes/" + id).body().get("tenant").asText());
        assertEquals(204, user.delete("/v1/sandboxes/" + id).status());
    }

    @Test
    void daemonWideAdministrationIsAnOperatorsNotATenantAdmins() throws Exception {
        for (String token : List.of("acme-admin", "seed-style-token", "acme-user")) {
            Api.Response refused = admin.as(token).get("/v1/plugins");
            assertEquals(403, refused.status(), token);
            assertTrue(refused.error().contains("needs an operator token"), refused.error());
            assertTrue(refused.error().contains("change 'admin' to 'operator'"), "says how to get one: " + refused.error());
            assertEquals(403, admin.as(token).get("/v1/features").status(), token);
        }
        Api operator = admin.as("the-operator");
        assertEquals(200, operator.get("/v1/plugins").status());
        assertEquals(200, operator.get("/v1/features").status());
        assertEquals(200, operator.get("/v1/sandboxes").status(), "an operator may do what an admin may");
    }

    @Test
    void daemonWarnsAtStartWhenNoTokenIsAnOperators() throws Exception {
        Path older = dir.resolve("older-tokens.txt");
        Files.writeString(older, "old-admin default admin\n");
        Daemon before = daemons.start(dir.resolve("older-state"), List.of("--token-file", older.toString()));
        assertTrue(before.output().stream().anyMatch(l -> l.contains("has no operator token")
                && l.contains("change 'admin' to 'operator'")), String.join("\n", before.output()));
        assertEquals(200, new Api(before.baseUrl(), "old-admin").get("/v1/sandboxes").status(), "the older file still works");
        assertFalse(daemon.output().stream().anyMatch(l -> l.contains("has no operator token")),
                "no warning when a token is an operator's");
    }

    @Test
    void badInputIsA4xxThatSaysWhatIsWrong() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String id = admin.createSandbox();
        String exec = "/v1/sandboxes/" + id + "/exec";
        // bodies the document refuses
        Api outside = admin.outsideTheContract();
        assertError(outside.post(exec, "{\"args\": [\"ls\""), 400, "malformed JSON");
        assertError(outside.post(exec, "{\"args\": [\"ls\"], \"bogus\": 1}"), 400, "unknown field \"bogus\"");
        assertError(outside.post(exec, "{\"args\": \"ls\"}"), 400, "\"args\" has the wrong type");
        assertError(outside.post(exec, "{\"args\": [\"ls\"], \"timeout_secs\": \"30\"}"), 400, "timeout_secs");
        assertError(outside.post(exec, "{\"args\": [\"ls\"], \"timeout_secs\": 0}"), 400, "timeout_secs");
        assertError(outside.post(exec, "{\"args\": []}"), 400, "args");
        assertError(outside.post(exec, ""), 400, "empty");
        assertError(outside.post(exec, "[]"), 400, "JSON object");
        assertError(admin.post(exec, Map.of("args", List.of("x".repeat(2 << 20)))), 413, "exceeds");
        assertError(admin.post("/v1/sandboxes/..%20etc/exec", Map.of("args", List.of("true"))), 400, "invalid sandbox id");
        assertError(admin.get("/v1/sandboxes/SB_BAD"), 400, "invalid sandbox id");
        assertError(admin.get("/v1/sandboxes/sb-000000000000"), 404, "no sandbox");
        // a method and paths the document does not have
        assertError(outside.send("PUT", "/v1/sandboxes", "{}"), 405, "not allowed");
        assertError(outside.get("/v1/nothing-here"), 404, "no route");
        assertError(outside.get("/v9/sandboxes"), 404, "/v1");
        assertError(admin.post("/v1/sandboxes", Map.of("backend", "qemu-on-mars")), 400, "not installed");
        assertError(admin.post("/v1/sandboxes", Map.of("memory_limit_mib", 1)), 400, "memory_limit_mib");
        assertError(admin.post("/v1/sandboxes", Map.of("node_id", "n1")), 400, "this daemon drives no nodes");
        assertError(outside.post("/v1/sandboxes", "{\"memory_limit_mib\": 1.5}"), 400, "memory_limit_mib");
        assertError(outside.post("/v1/sandboxes", "{\"snapshot_tags\": 7}"), 400, "unknown field");
    }

    private static void assertError(Api.Response r, int status, String fragment) {
        assertEquals(status, r.status(), r.raw().body());
        assertNotNull(r.error(), "every error has an error field: " + r.raw().body());
        assertTrue(r.error().contains(fragment), "'" + r.error() + "' should mention " + fragment);
        assertTrue(r.raw().headers().firstValue("content-type").orElse("").startsWith("application/json"));
    }
}
