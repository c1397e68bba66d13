package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A third-party backend (itests/example-backend, bundle com.example.vivarium.echo, built against
 * the api and kit bundles alone: the kit's agent in each sandbox, no isolation) hot-deployed into a
 * running daemon through its deploy folder: it appears in /v1/backends with what it can do, runs
 * sandboxes, survives its own removal and return (adoption), and goes away with its jar, while
 * procbox is untouched throughout.
 */
class VendorBackendIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String JAR = "example-backend.jar";
    private static final String NAME = "example-local";
    private static final Duration FILEINSTALL = Duration.ofSeconds(30);

    @TempDir
    static Path dir;
    static DeployFolder deploy;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        Path deployDir = Files.createDirectories(dir.resolve("deploy"));
        deploy = new DeployFolder(deployDir);
        daemon = daemons.start(dir.resolve("state"), deploy.daemonArgs());
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @Test
    void aVendorBackendArrivesWithItsJarRunsSandboxesAndLeavesWithIt() throws Exception {
        JsonNode procbox = backend("procbox");
        assertNotNull(procbox, "procbox is registered before the vendor backend arrives");
        String procboxSandbox = Host.canRunProcbox() ? create("procbox") : null;
        assertEquals(null, backend(NAME));

        deploy.deploy(DeployFolder.exampleJar("backend"), JAR);
        JsonNode ours = DeployFolder.await(NAME + " in /v1/backends", FILEINSTALL, () -> backend(NAME));
        assertEquals("com.example.vivarium.echo", ours.get("bundle").asText());
        assertTrue(ours.get("available").asBoolean(), ours.toString());
        assertTrue(ours.get("reason").asText().startsWith("no isolation"), "it says what it lacks: " + ours);
        assertTrue(Api.can(ours, "exec") && Api.can(ours, "snapshot") && Api.can(ours, "fork"), ours.toString());
        assertFalse(Api.can(ours, "dry_run") || Api.can(ours, "pause") || ours.get("machine").asBoolean(),
                ours.toString());
        assertSameBackend(procbox, backend("procbox"));

        String id = create(NAME);
        JsonNode info = api.get("/v1/sandboxes/" + id).body();
        assertEquals(NAME, info.get("backend").asText());
        assertEquals("running", info.get("status").asText());
        Path work = daemon.stateDir().resolve("sandboxes").resolve(id).resolve("work");
        assertEquals(work.toString(), info.get("workspace").asText(), "no namespaces: the workspace is its host path");

        JsonNode hi = api.exec(id, "echo", "hi");
        assertEquals("hi\n", hi.get("stdout").asText());
        assertEquals(0, hi.get("exit_code").asInt());
        assertFalse(hi.get("timed_out").asBoolean());
        assertFalse(hi.get("truncated").asBoolean());

        assertEquals(work.toString() + "\n", api.exec(id, "pwd").get("stdout").asText(),
                "no isolation: commands run in the sandbox's directory on the host");
        Files.createDirectories(work.resolve("sub"));
        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "printf '%s|' \"$@\"; echo \"$GREETING\"; basename \"$PWD\"; cat", "sh", "$(id)", "a b"),
                "env", Map.of("GREETING", "hello there"), "cwd", work.resolve("sub").toString(), "stdin", "from stdin"));
        assertEquals(200, r.status(), r.raw().body());
        assertEquals("$(id)|a b|hello there\nsub\nfrom stdin", r.body().get("stdout").asText());

        Api.Response slow = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "sleep 600"), "timeout_secs", 1));
        assertTrue(slow.body().get("timed_out").asBoolean(), slow.raw().body());
        assertEquals(137, slow.body().get("exit_code").asInt());
        assertTrue(slow.body().get("duration_ms").asLong() < 10_000);

        Api.Response capped = api.post("/v1/sandboxes/" + id + "/exec", Map.of(
                "args", List.of("sh", "-c", "echo 0123456789; echo oops >&2"), "max_output_bytes", 4));
        assertEquals("0123", capped.body().get("stdout").asText());
        assertEquals("oops", capped.body().get("stderr").asText());
        assertTrue(capped.body().get("truncated").asBoolean());

        Api.Response nowhere = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"), "cwd",
                work.resolve("no-such-dir").toString()));
        assertEquals(127, nowhere.body().get("exit_code").asInt(), nowhere.raw().body());
        assertTrue(nowhere.body().get("stderr").asText().contains("cannot chdir"), nowhere.raw().body());

        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        assertFalse(Files.exists(work));
        assertEquals(404, api.get("/v1/sandboxes/" + id).status());

        deploy.remove(JAR);
        DeployFolder.await(NAME + " gone from /v1/backends", FILEINSTALL, () -> backend(NAME) == null ? true : null);
        assertSameBackend(procbox, backend("procbox"));
        if (procboxSandbox != null) {
            assertEquals("still here\n", api.exec(procboxSandbox, "echo", "still here").get("stdout").asText());
            assertEquals(204, api.delete("/v1/sandboxes/" + procboxSandbox).status());
        }
    }

    @Test
    void itsSandboxesOutliveTheBundleAndAreAdoptedWhenItReturns() throws Exception {
        deploy.deploy(DeployFolder.exampleJar("backend"), JAR);
        DeployFolder.await(NAME + " in /v1/backends", FILEINSTALL, () -> backend(NAME));
        String id = create(NAME);
        api.exec(id, "sh", "-c", "echo kept > note");

        deploy.remove(JAR);
        DeployFolder.await(id + " reported backend_unavailable", FILEINSTALL, () ->
                "backend_unavailable".equals(api.get("/v1/sandboxes/" + id).body().get("status").asText()) ? true : null);

        deploy.deploy(DeployFolder.exampleJar("backend"), JAR);
        DeployFolder.await(NAME + " back in /v1/backends", FILEINSTALL, () -> backend(NAME));
        assertEquals("running", api.get("/v1/sandboxes/" + id).body().get("status").asText());
        assertEquals("kept\n", api.exec(id, "cat", "note").get("stdout").asText());

        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        deploy.remove(JAR);
        DeployFolder.await(NAME + " gone from /v1/backends", FILEINSTALL, () -> backend(NAME) == null ? true : null);
    }

    private static String create(String backend) throws Exception {
        Api.Response r = api.post("/v1/sandboxes", Map.of("backend", backend));
        assertEquals(201, r.status(), r.raw().body());
        return r.body().get("id").asText();
    }

    /** The backend's entry in /v1/backends, or null. */
    private static JsonNode backend(String name) throws Exception {
        Api.Response r = api.get("/v1/backends");
        assertEquals(200, r.status(), r.raw().body());
        for (JsonNode b : r.body()) {
            if (name.equals(b.get("name").asText())) {
                return b;
            }
        }
        return null;
    }

    /** Same bundle, version, capabilities and availability; its sandbox count may differ. */
    private static void assertSameBackend(JsonNode expected, JsonNode actual) {
        assertNotNull(actual, "procbox is still registered");
        for (String field : List.of("name", "bundle", "version", "capabilities", "available", "reason")) {
            assertEquals(expected.get(field), actual.get(field), field);
        }
    }
}
