package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A second API surface (itests/example-surface: {@code GET /v2/hello}, built against the api
 * bundle alone) hot-deployed next to {@code /v1}: both are served, {@code /version} lists both, and
 * removing the jar takes {@code /v2} away while {@code /v1} stays.
 */
class ApiSurfaceIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String JAR = "example-surface.jar";
    private static final Duration FILEINSTALL = Duration.ofSeconds(30);

    @TempDir
    static Path dir;
    static DeployFolder deploy;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        daemon = daemons.start(dir.resolve("state"), deploy.daemonArgs());
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @Test
    void aV2SurfaceIsServedNextToV1WhileItsJarIsDeployed() throws Exception {
        assertNoV2();
        assertEquals(List.of("v1"), apis());

        deploy.deploy(DeployFolder.exampleJar("surface"), JAR);
        Api.Response hello = DeployFolder.await("/v2/hello to answer", FILEINSTALL, () -> {
            Api.Response r = api.onAVendorSurface().get("/v2/hello");
            return r.status() == 200 ? r : null;
        });
        assertEquals("{\"hello\":\"v2\"}", hello.raw().body());
        assertEquals(200, api.get("/v1/backends").status());
        assertEquals(List.of("v1", "v2"), apis());
        assertEquals(401, api.as(null).onAVendorSurface().get("/v2/hello").status(), "the edge authenticates /v2 like /v1");
        assertEquals(405, api.onAVendorSurface().send("POST", "/v2/hello", "{}").status());

        deploy.remove(JAR);
        DeployFolder.await("/v2 to go away", FILEINSTALL, () -> api.onAVendorSurface().get("/v2/hello").status() == 404 ? true : null);
        assertNoV2();
        assertEquals(200, api.get("/v1/backends").status());
        assertEquals(List.of("v1"), apis());
    }

    /** No /v2: a path the document does not have, answered with its error. */
    private static void assertNoV2() throws Exception {
        Api.Response r = api.outsideTheContract().get("/v2/hello");
        assertEquals(404, r.status(), r.raw().body());
        assertNotNull(r.error(), "a JSON error body: " + r.raw().body());
        assertTrue(r.error().contains("/v1"), r.error());
    }

    private static List<String> apis() throws Exception {
        Api.Response r = api.get("/version");
        assertEquals(200, r.status(), r.raw().body());
        return Api.JSON.convertValue(r.body().get("apis"), Api.JSON.getTypeFactory()
                .constructCollectionType(List.class, String.class));
    }
}
