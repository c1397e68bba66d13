package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.PluginsIT.assertError;
import static io.vivarium.itests.e2e.PluginsIT.plugins;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/** /v1/features: enabling and disabling features of the running daemon, and the set surviving a restart. */
class FeaturesIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;

    @BeforeAll
    static void start() throws Exception {
        daemon = daemons.start(dir.resolve("state"), List.of());
        admin = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @Test
    void listsTheDistributionsFeatures() throws Exception {
        Map<String, JsonNode> features = features(admin);
        assertEquals(List.of("api-v1", "cloud-hypervisor", "core", "fingerprint-sha256", "fingerprint-stat", "firecracker", "fleet",
                "gvisor", "images-oci", "metrics", "procbox", "qemu", "state-postgres", "storage-reflink"),
                List.copyOf(features.keySet()));
        for (String optIn : List.of("qemu", "firecracker", "cloud-hypervisor")) {
            assertFalse(features.get(optIn).get("enabled").asBoolean(), "the " + optIn + " backend is enabled only when asked for");
        }
        assertFalse(features.get("gvisor").get("enabled").asBoolean(), "the gvisor backend is enabled only when asked for");
        JsonNode core = features.get("core");
        assertTrue(core.get("enabled").asBoolean());
        assertFalse(core.get("description").asText().isEmpty());
        assertTrue(core.get("bundles").toString().contains("io.vivarium:plugins:"), core.toString());
        assertError(admin.as(null).get("/v1/features"), 401, "bearer");
    }

    @Test
    void unknownAndRequiredFeaturesAreRefused() throws Exception {
        assertError(admin.post("/v1/features/no-such/enable", ""), 404, "no-such");
        assertError(admin.post("/v1/features/no-such/disable", ""), 404, "no-such");
        assertError(admin.post("/v1/features/core/disable", ""), 409, "core");
        assertError(admin.post("/v1/features/api-v1/disable", ""), 409, "--features");
        assertError(admin.post("/v1/features/state-postgres/enable", ""), 409, "--state-url");
        assertFalse(features(admin).get("state-postgres").get("enabled").asBoolean(), "the store is chosen at start only");
        assertTrue(features(admin).get("api-v1").get("enabled").asBoolean());
    }

    @Test
    void fingerprintModesFollowTheEnabledFeatures() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String sandbox = admin.createSandbox();
        assertEquals("sha256", baselineMode(sandbox));

        JsonNode off = ok(admin.post("/v1/features/fingerprint-sha256/disable", ""));
        assertFalse(off.get("enabled").asBoolean());
        assertFalse(plugins(admin).containsKey("io.vivarium.fingerprint-sha256"), "its bundle is uninstalled");
        assertEquals("stat", baselineMode(sandbox));

        JsonNode on = ok(admin.post("/v1/features/fingerprint-sha256/enable", ""));
        assertTrue(on.get("enabled").asBoolean());
        assertEquals("sha256", baselineMode(sandbox));
        assertEquals("fingerprint-sha256", plugins(admin).get("io.vivarium.fingerprint-sha256").get("feature").asText());
        ok(admin.post("/v1/features/fingerprint-sha256/enable", "")); // enabling twice changes nothing
        assertEquals(204, admin.delete("/v1/sandboxes/" + sandbox).status());
    }

    @Test
    void aDisabledBackendsSandboxesWaitAndAreReadoptedWhenItComesBack() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String sandbox = admin.createSandbox();
        long initPid = admin.get("/v1/sandboxes/" + sandbox).body().get("pid").asLong();
        String bgPid = Api.sh(admin, sandbox, "sleep 600 >/dev/null 2>&1 & echo $!").strip();

        ok(admin.post("/v1/features/procbox/disable", ""));
        assertFalse(backends().contains("procbox"), backends().toString());
        JsonNode listed = admin.get("/v1/sandboxes").body().findParents("id").stream()
                .filter(s -> s.get("id").asText().equals(sandbox)).findFirst().orElseThrow();
        assertEquals("backend_unavailable", listed.get("status").asText(), listed.toString());
        assertFalse(features(admin).get("procbox").get("enabled").asBoolean());

        ok(admin.post("/v1/features/procbox/enable", ""));
        assertTrue(backends().contains("procbox"), backends().toString());
        JsonNode sb = admin.get("/v1/sandboxes/" + sandbox).body();
        assertEquals("running", sb.get("status").asText(), sb.toString());
        assertEquals(initPid, sb.get("pid").asLong(), "the same sandbox, re-adopted");
        assertEquals("alive", Api.sh(admin, sandbox, "kill -0 " + bgPid + " && echo alive").strip());
        assertEquals(204, admin.delete("/v1/sandboxes/" + sandbox).status());
    }

    @Test
    void aRestartWithoutFeaturesRunsTheSavedSet() throws Exception {
        Path state = dir.resolve("restart-state");
        {
            Daemon first = daemons.start(state, List.of());
            Api api = new Api(first.baseUrl(), first.adminToken());
            ok(api.post("/v1/features/fingerprint-stat/disable", ""));
            assertEquals(0, first.stop());
        }
        assertTrue(Files.readString(state.resolve("features.json")).contains("fingerprint-sha256"));
        {
            Daemon second = daemons.start(state, List.of());
            Api api = new Api(second.baseUrl(), second.adminToken());
            assertFalse(features(api).get("fingerprint-stat").get("enabled").asBoolean());
            assertTrue(features(api).get("fingerprint-sha256").get("enabled").asBoolean());
            assertFalse(plugins(api).containsKey("io.vivarium.fingerprint-stat"), "the saved set is what runs");
            assertTrue(plugins(api).containsKey("io.vivarium.fingerprint-sha256"));
            assertEquals(0, second.stop());
        }
        {
            Daemon third = daemons.start(state, List.of("--features", "core,api-v1,fingerprint-stat"));
            Api api = new Api(third.baseUrl(), third.adminToken());
            assertTrue(plugins(api).containsKey("io.vivarium.fingerprint-stat"), "--features wins over the saved set");
            assertFalse(plugins(api).containsKey("io.vivarium.fingerprint-sha256"));
            assertTrue(features(api).get("fingerprint-stat").get("enabled").asBoolean());
        }
    }

    // ------------------------------------------------------------------------------------------

    private String baselineMode(String sandbox) throws Exception {
        return ok(admin.post("/v1/sandboxes/" + sandbox + "/baseline", Map.of("paths", List.of("/work")))).get("mode").asText();
    }

    private static List<String> backends() throws Exception {
        List<String> names = new ArrayList<>();
        ok(admin.get("/v1/backends")).forEach(b -> names.add(b.get("name").asText()));
        return names;
    }

    private static Map<String, JsonNode> features(Api api) throws Exception {
        Map<String, JsonNode> out = new TreeMap<>();
        ok(api.get("/v1/features")).forEach(f -> out.put(f.get("name").asText(), f));
        return out;
    }

    private static JsonNode ok(Api.Response r) {
        assertEquals(200, r.status(), r.raw().body());
        return r.body();
    }
}
