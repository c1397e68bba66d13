package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.List;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.SandboxService;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleException;

/**
 * Bundles come and go while the daemon runs: a backend bundle stopped is a backend gone (from core
 * and from the API), started again it is back; the API surface bundle stopped takes its routes with
 * it while the HTTP edge keeps answering. Each test leaves every bundle started.
 */
@RunWith(PaxExam.class)
public class BackendLifecycleIT extends VivariumOsgiTestSupport {

    private static final String PROCBOX_BUNDLE = "io.vivarium.backend-procbox";
    private static final String API_V1_BUNDLE = "io.vivarium.api-v1";

    @Test
    public void stoppingTheProcboxBundleRemovesTheBackendAndStartingItBringsItBack() throws BundleException {
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        Bundle procbox = bundle(PROCBOX_BUNDLE);
        await("core lists procbox", () -> names(sandboxes).contains("procbox"), () -> names(sandboxes));
        awaitGet("/v1/backends", true, "lists procbox", h -> h.status() == 200 && backendNames(h).contains("procbox"));

        procbox.stop();
        try {
            assertEquals(Bundle.RESOLVED, procbox.getState());
            await("core no longer lists procbox", () -> !names(sandboxes).contains("procbox"), () -> names(sandboxes));
            Http gone = awaitGet("/v1/backends", true, "answers 200 without procbox",
                    h -> h.status() == 200 && !backendNames(h).contains("procbox"));
            assertTrue(gone.body(), gone.json().isArray());
        } finally {
            procbox.start();
        }

        assertEquals(Bundle.ACTIVE, procbox.getState());
        await("core lists procbox again", () -> names(sandboxes).contains("procbox"), () -> names(sandboxes));
        awaitGet("/v1/backends", true, "lists procbox again", h -> h.status() == 200 && backendNames(h).contains("procbox"));
    }

    @Test
    public void stoppingTheApiV1BundleTakesItsRoutesAwayWhileHealthzStaysUp() throws BundleException {
        Bundle apiV1 = bundle(API_V1_BUNDLE);
        awaitGet("/v1/backends", true, "answers 200", h -> h.status() == 200);

        apiV1.stop();
        try {
            Http notFound = awaitGet("/v1/backends", true, "answers 404 once api-v1 is stopped", h -> h.status() == 404);
            assertTrue("404 body is not {\"error\": \"...\"}: " + notFound.body(), notFound.json().path("error").isTextual());
            assertTrue("404 Content-Type: " + notFound.contentType(), notFound.contentType().startsWith("application/json"));
            Http health = get("/healthz", false);
            assertEquals(health.toString(), 200, health.status());
            assertEquals("{\"ok\":true}", health.json().toString());
        } finally {
            apiV1.start();
        }

        awaitGet("/v1/backends", true, "answers 200 again once api-v1 is started",
                h -> h.status() == 200 && backendNames(h).contains("procbox"));
    }

    private static List<String> names(SandboxService sandboxes) {
        return sandboxes.backends().stream().map(BackendInfo::name).toList();
    }
}
