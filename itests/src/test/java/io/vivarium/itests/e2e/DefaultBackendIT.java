package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * A daemon without procbox ({@code --features core,api-v1,fingerprint-sha256}) whose only backend is
 * the example vendor backend, deployed as a jar: a create that names no backend uses it.
 */
class DefaultBackendIT {
    private static final String NAME = "example-local";

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        List<String> args = new java.util.ArrayList<>(List.of("--features", "core,api-v1,fingerprint-sha256"));
        args.addAll(deploy.daemonArgs());
        daemon = daemons.start(dir.resolve("state"), args);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        deploy.deploy(DeployFolder.exampleJar("backend"), "example-backend.jar");
    }


    @Test
    void aCreateThatNamesNoBackendUsesTheOnlyOne() throws Exception {
        JsonNode backends = DeployFolder.await(NAME + " in /v1/backends", Duration.ofSeconds(30), () -> {
            JsonNode all = api.get("/v1/backends").body();
            return all.size() == 1 && all.get(0).get("name").asText().equals(NAME) ? all : null;
        });
        assertTrue(backends.get(0).get("details").get("agent").asText().endsWith("/vivarium-agent"), backends.toString());

        Api.Response created = api.post("/v1/sandboxes", Map.of());
        assertEquals(201, created.status(), String.valueOf(created.body()));
        assertEquals(NAME, created.body().get("backend").asText());
        String id = created.body().get("id").asText();
        assertEquals("hi\n", api.exec(id, "echo", "hi").get("stdout").asText());

        Api.Response vcpus = api.post("/v1/sandboxes", Map.of("vcpus", 2));
        assertEquals(400, vcpus.status());
        assertEquals(true, vcpus.error().contains("vcpus is not supported by backend " + NAME), vcpus.error());
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }
}
