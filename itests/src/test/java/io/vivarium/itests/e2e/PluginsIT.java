package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** /v1/plugins: listing, installing, updating and uninstalling bundles in the running daemon. */
class PluginsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String PROCBOX = "io.vivarium.backend-procbox";
    /** Bundles that must not be touched by a procbox update. */
    private static final List<String> BYSTANDERS = List.of("io.vivarium.api", "io.vivarium.core", "io.vivarium.http",
            "io.vivarium.api-v1", "io.vivarium.plugins", "io.vivarium.fingerprint-sha256", "io.vivarium.fingerprint-stat",
            "org.apache.felix.scr", "org.apache.felix.http.jetty12");

    @TempDir
    static Path dir;
    static Daemon daemon;
    /** The operator's: plugins and features are daemon-wide administration. */
    static Api admin;
    static Api user;
    static Api tenantAdmin;

    @BeforeAll
    static void start() throws Exception {
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "root-token default operator\nuser-token default user\ntenant-admin default admin\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "root-token");
        user = admin.as("user-token");
        tenantAdmin = admin.as("tenant-admin");
    }

    @Test
    void listsEveryBundleWithWhatItProvidesAndItsFeature() throws Exception {
        Map<String, JsonNode> plugins = plugins(admin);
        assertFalse(plugins.containsKey("org.apache.felix.framework"), "the framework itself is not listed");
        assertProvides(plugins, "io.vivarium.api", List.of(), "core");
        assertProvides(plugins, "io.vivarium.core", List.of("service:sandboxes"), "core");
        assertProvides(plugins, "io.vivarium.http", List.of(), "core");
        assertProvides(plugins, "io.vivarium.plugins", List.of("service:plugins"), "core");
        assertProvides(plugins, "io.vivarium.api-v1", List.of("api:/v1"), "api-v1");
        assertProvides(plugins, PROCBOX, List.of("backend:procbox"), "procbox");
        assertProvides(plugins, "io.vivarium.fingerprint-sha256", List.of("fingerprint:sha256"), "fingerprint-sha256");
        assertProvides(plugins, "io.vivarium.fingerprint-stat", List.of("fingerprint:stat"), "fingerprint-stat");
        assertProvides(plugins, "org.apache.felix.scr", List.of(), "core");
        JsonNode core = plugins.get("io.vivarium.core");
        assertTrue(core.get("id").asLong() > 0);
        assertTrue(core.get("location").asText().startsWith("file:") && core.get("location").asText().contains("/system/"),
                core.toString());
    }

    @Test
    void onlyOperatorsManageBundlesNotATenantsAdmin() throws Exception {
        byte[] jar = BundleJars.bundle("test.forbidden", "1.0.0", null);
        for (Api refused : List.of(user, tenantAdmin)) {
            assertError(refused.get("/v1/plugins"), 403, "operator");
            assertError(refused.sendBytes("POST", "/v1/plugins", jar), 403, "operator");
            assertError(refused.sendBytes("PUT", "/v1/plugins/" + PROCBOX, jar), 403, "operator");
            assertError(refused.delete("/v1/plugins/" + PROCBOX), 403, "operator");
            assertError(refused.get("/v1/features"), 403, "operator");
            assertError(refused.post("/v1/features/procbox/disable", ""), 403, "operator");
        }
        assertError(tenantAdmin.get("/v1/plugins"), 403, "change 'admin' to 'operator'");
        assertFalse(plugins(admin).containsKey("test.forbidden"));
    }

    @Test
    void whatIsNotABundleIsRefusedAndNothingChanges() throws Exception {
        Map<String, Long> before = ids(plugins(admin));
        List<String> storedBefore = stored();
        assertError(admin.sendBytes("POST", "/v1/plugins", "just text".getBytes(StandardCharsets.UTF_8)), 400,
                "not an OSGi bundle");
        assertError(admin.sendBytes("POST", "/v1/plugins", new byte[0]), 400, "not an OSGi bundle");
        assertError(admin.sendBytes("POST", "/v1/plugins", BundleJars.plainJar()), 400, "no Bundle-ManifestVersion");
        assertError(admin.sendBytes("POST", "/v1/plugins", BundleJars.bundle("", "1.0.0", null)), 400,
                "Bundle-SymbolicName");
        assertEquals(before, ids(plugins(admin)));
        assertEquals(storedBefore, stored(), "nothing is stored");
    }

    @Test
    void anUnresolvableBundleIsRefusedNamingTheRequirementAndNothingChanges() throws Exception {
        Map<String, Long> before = ids(plugins(admin));
        byte[] jar = BundleJars.bundle("test.unresolvable", "1.0.0", "no.such.pkg");
        Api.Response r = admin.sendBytes("POST", "/v1/plugins", jar);
        assertError(r, 400, "no.such.pkg");
        assertEquals(before, ids(plugins(admin)), "the running set is as before");
        assertFalse(Files.exists(daemon.stateDir().resolve("plugins/test.unresolvable.jar")));
    }

    @Test
    void installUpdateAndUninstallABundle() throws Exception {
        Api.Response installed = admin.sendBytes("POST", "/v1/plugins", BundleJars.bundle("test.hello", "1.0.0", null));
        assertEquals(201, installed.status(), installed.raw().body());
        JsonNode b = installed.body();
        assertEquals("test.hello", b.get("symbolic_name").asText());
        assertEquals("1.0.0", b.get("version").asText());
        assertEquals("active", b.get("state").asText());
        assertEquals("vivarium:plugin:test.hello", b.get("location").asText());
        assertNull(b.get("feature"), "installed on its own");
        long id = b.get("id").asLong();
        Path stored = daemon.stateDir().resolve("plugins/test.hello.jar");
        assertTrue(Files.isRegularFile(stored), "stored to survive a restart");
        assertError(admin.sendBytes("POST", "/v1/plugins", BundleJars.bundle("test.hello", "2.0.0", null)), 409, "PUT");

        Api.Response updated = admin.sendBytes("PUT", "/v1/plugins/test.hello", BundleJars.bundle("test.hello", "1.1.0", null));
        assertEquals(200, updated.status(), updated.raw().body());
        assertEquals("1.1.0", updated.body().get("version").asText());
        assertEquals(id, updated.body().get("id").asLong(), "an update keeps the bundle");
        assertEquals("active", updated.body().get("state").asText());

        assertError(admin.sendBytes("PUT", "/v1/plugins/test.hello", BundleJars.bundle("test.hello", "1.2.0", "no.such.pkg")),
                400, "no.such.pkg");
        JsonNode after = plugins(admin).get("test.hello");
        assertEquals("1.1.0", after.get("version").asText(), "a failed update is rolled back");
        assertEquals("active", after.get("state").asText());
        assertEquals(id, after.get("id").asLong());
        assertError(admin.sendBytes("PUT", "/v1/plugins/test.hello", BundleJars.bundle("test.other", "1.0.0", null)),
                400, "test.other");
        assertError(admin.sendBytes("PUT", "/v1/plugins/test.hello", BundleJars.plainJar()), 400, "no Bundle-ManifestVersion");
        assertEquals("1.1.0", plugins(admin).get("test.hello").get("version").asText(), "a plain jar replaces nothing");
        assertError(admin.sendBytes("PUT", "/v1/plugins/test.nothing", BundleJars.bundle("test.nothing", "1.0.0", null)),
                404, "test.nothing");

        assertEquals(204, admin.delete("/v1/plugins/test.hello").status());
        assertFalse(plugins(admin).containsKey("test.hello"));
        assertFalse(Files.exists(stored), "the stored jar is removed");
        assertError(admin.delete("/v1/plugins/test.hello"), 404, "test.hello");
    }

    @Test
    void whatTheDaemonRunsOnCannotBeUninstalled() throws Exception {
        assertError(admin.delete("/v1/plugins/io.vivarium.core"), 409, "core");
        assertError(admin.delete("/v1/plugins/org.apache.felix.scr"), 409, "core");
        assertError(admin.delete("/v1/plugins/io.vivarium.plugins"), 409, "core");
        assertError(admin.delete("/v1/plugins/" + PROCBOX), 409, "/v1/features/procbox/disable");
        assertEquals("active", plugins(admin).get("io.vivarium.core").get("state").asText());
    }

    @Test
    void theApiBundleCannotBeReplacedByAnotherMajorVersion() throws Exception {
        Map<String, Long> before = ids(plugins(admin));
        String installed = plugins(admin).get("io.vivarium.api").get("version").asText();
        byte[] jar = BundleJars.withVersion(BundleJars.shipped("api"), "2.0.0");
        Api.Response r = admin.sendBytes("PUT", "/v1/plugins/io.vivarium.api", jar);
        assertError(r, 409, "2.0.0");
        assertTrue(r.error().contains(installed), r.error());
        assertEquals(before, ids(plugins(admin)));
        assertEquals(installed, plugins(admin).get("io.vivarium.api").get("version").asText());
    }

    @Test
    void procboxIsUpdatedUnderARunningSandboxAndNothingElseRestarts() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String sandbox = admin.createSandbox();
        long initPid = admin.get("/v1/sandboxes/" + sandbox).body().get("pid").asLong();
        admin.exec(sandbox, "sh", "-c", "sleep 600 & echo $! > /work/bg.pid");
        String bgPid = Api.sh(admin, sandbox, "cat /work/bg.pid").strip();
        Map<String, JsonNode> before = plugins(admin);

        Api.Response r = admin.sendBytes("PUT", "/v1/plugins/" + PROCBOX,
                BundleJars.withVersion(BundleJars.shipped("backend-procbox"), "0.1.0.upgrade1"));
        assertEquals(200, r.status(), r.raw().body());
        assertEquals("0.1.0.upgrade1", r.body().get("version").asText());
        assertEquals("active", r.body().get("state").asText());
        assertEquals(before.get(PROCBOX).get("id").asLong(), r.body().get("id").asLong());

        JsonNode backend = backend("procbox");
        assertEquals("0.1.0.upgrade1", backend.get("version").asText(), backend.toString());
        JsonNode sb = admin.get("/v1/sandboxes/" + sandbox).body();
        assertEquals("running", sb.get("status").asText(), sb.toString());
        assertEquals(initPid, sb.get("pid").asLong(), "the same init process");
        assertEquals("alive", Api.sh(admin, sandbox, "kill -0 " + bgPid + " && echo alive").strip(),
                "a background process started before the update still runs");

        Map<String, JsonNode> after = plugins(admin);
        for (String name : BYSTANDERS) {
            assertEquals(before.get(name).get("id").asLong(), after.get(name).get("id").asLong(), name + " keeps its bundle");
            assertEquals("active", after.get(name).get("state").asText(), name);
        }
        assertNotEquals(before.get(PROCBOX).get("version").asText(), after.get(PROCBOX).get("version").asText());
        assertEquals(204, admin.delete("/v1/sandboxes/" + sandbox).status());
    }

    @Test
    void pluginsAndUpdatesComeBackAfterARestart() throws Exception {
        Path state = dir.resolve("restart-state");
        byte[] procbox = BundleJars.withVersion(BundleJars.shipped("backend-procbox"), "0.1.0.persisted");
        {
            Daemon first = daemons.start(state, List.of());
            Api api = new Api(first.baseUrl(), first.adminToken());
            assertEquals(201, api.sendBytes("POST", "/v1/plugins", BundleJars.bundle("test.kept", "1.0.0", null)).status());
            assertEquals(200, api.sendBytes("PUT", "/v1/plugins/" + PROCBOX, procbox).status());
            assertEquals(0, first.stop());
        }
        {
            Daemon second = daemons.start(state, List.of());
            Api api = new Api(second.baseUrl(), second.adminToken());
            JsonNode kept = await(api, "test.kept", "1.0.0");
            assertEquals("vivarium:plugin:test.kept", kept.get("location").asText());
            JsonNode updated = await(api, PROCBOX, "0.1.0.persisted");
            assertEquals("procbox", updated.get("feature").asText(), "still the feature's bundle");
            assertTrue(updated.get("location").asText().contains("/system/"), updated.toString());
        }
    }

    // ------------------------------------------------------------------------------------------

    /** The restore runs in the background after start-up: waits for the bundle to be active in that version. */
    private static JsonNode await(Api api, String symbolicName, String version) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        JsonNode b = null;
        while (System.nanoTime() < deadline) {
            b = plugins(api).get(symbolicName);
            if (b != null && b.get("version").asText().equals(version) && b.get("state").asText().equals("active")) {
                return b;
            }
            Thread.sleep(200);
        }
        throw new AssertionError(symbolicName + " " + version + " is not active after a restart: " + b);
    }

    private static List<String> stored() throws Exception {
        Path plugins = daemon.stateDir().resolve("plugins");
        if (!Files.isDirectory(plugins)) {
            return List.of();
        }
        try (var s = Files.list(plugins)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static JsonNode backend(String name) throws Exception {
        for (JsonNode b : admin.get("/v1/backends").body()) {
            if (b.get("name").asText().equals(name)) {
                return b;
            }
        }
        throw new AssertionError("no backend " + name);
    }

    static Map<String, JsonNode> plugins(Api api) throws Exception {
        Api.Response r = api.get("/v1/plugins");
        assertEquals(200, r.status(), r.raw().body());
        Map<String, JsonNode> out = new TreeMap<>();
        r.body().forEach(p -> out.put(p.get("symbolic_name").asText(), p));
        return out;
    }

    private static Map<String, Long> ids(Map<String, JsonNode> plugins) {
        Map<String, Long> out = new TreeMap<>();
        plugins.forEach((name, p) -> out.put(name, p.get("id").asLong()));
        return out;
    }

    private static void assertProvides(Map<String, JsonNode> plugins, String name, List<String> provides, String feature) {
        JsonNode p = plugins.get(name);
        assertTrue(p != null, name + " is listed: " + plugins.keySet());
        List<String> actual = new ArrayList<>();
        p.get("provides").forEach(n -> actual.add(n.asText()));
        assertEquals(provides, actual, name);
        assertEquals(feature, p.get("feature").asText(), name);
        assertEquals("active", p.get("state").asText(), name);
    }

    static void assertError(Api.Response r, int status, String fragment) {
        assertEquals(status, r.status(), r.raw().body());
        assertTrue(r.error() != null && r.error().contains(fragment), "'" + r.error() + "' should mention " + fragment);
    }
}
