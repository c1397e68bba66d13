package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /metrics} on the assembled daemon: guarded by an operator token, counters that move by
 * what real requests did with route templates as labels, a scrape {@code promtool} accepts, and a
 * daemon without the metrics feature that serves no {@code /metrics} and works the same.
 */
class MetricsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Api admin;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "root-token default operator\nuser-token default user\nadmin-token acme admin\n");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "root-token");
    }

    @Test
    void onlyAnOperatorTokenScrapes() throws Exception {
        Api.Response anonymous = admin.as(null).get("/metrics");
        assertEquals(401, anonymous.status());
        assertTrue(anonymous.error().contains("bearer"), anonymous.error());
        Api.Response user = admin.as("user-token").get("/metrics");
        assertEquals(403, user.status());
        assertTrue(user.error().contains("operator"), user.error());
        Api.Response tenantAdmin = admin.as("admin-token").get("/metrics");
        assertEquals(403, tenantAdmin.status(), "a tenant's admin may not see every tenant's sandboxes");
        assertTrue(tenantAdmin.error().contains("operator"), tenantAdmin.error());
        HttpResponse<byte[]> scrape = admin.raw("GET", "/metrics", null);
        assertEquals(200, scrape.statusCode());
        assertEquals("text/plain; version=0.0.4; charset=utf-8", scrape.headers().firstValue("Content-Type").orElse(""));
    }

    @Test
    void countersMoveByWhatRequestsDidWithRouteTemplatesAsLabels() throws Exception {
        String before = scrape();
        String id = admin.createSandbox();
        admin.exec(id, "sh", "-c", "head -c 50000 /dev/zero > /work/zeros");
        assertEquals(200, admin.get("/v1/sandboxes/" + id).status());
        assertEquals(404, admin.outsideTheContract().get("/v1/no-such-route").status());
        String during = scrape();
        assertEquals(204, admin.delete("/v1/sandboxes/" + id).status());
        String after = scrape();

        assertEquals(1, delta(before, after, "vivarium_http_requests_total{class=\"success\",method=\"POST\",route=\"/v1/sandboxes\"}"));
        assertEquals(1, delta(before, after, "vivarium_http_requests_total{class=\"success\",method=\"POST\",route=\"/v1/sandboxes/{id}/exec\"}"));
        assertEquals(1, delta(before, after, "vivarium_http_requests_total{class=\"success\",method=\"GET\",route=\"/v1/sandboxes/{id}\"}"));
        assertEquals(1, delta(before, after, "vivarium_http_requests_total{class=\"success\",method=\"DELETE\",route=\"/v1/sandboxes/{id}\"}"));
        assertEquals(1, delta(before, after, "vivarium_http_requests_total{class=\"client_error\",method=\"GET\",route=\"unmatched\"}"));
        assertEquals(1, delta(before, after, "vivarium_http_request_duration_seconds_count{class=\"success\",method=\"POST\",route=\"/v1/sandboxes\"}"));
        assertFalse(after.contains("route=\"/v1/sandboxes/" + id), "no series per sandbox id in a route label");
        assertFalse(after.contains("no-such-route"), "an unmatched path is not a label");

        assertEquals(1, delta(before, after, "vivarium_sandbox_creates_total{outcome=\"ok\"}"));
        assertEquals(0, delta(before, after, "vivarium_sandbox_creates_total{outcome=\"failed\"}"));
        assertEquals(1, delta(before, after, "vivarium_sandbox_deletes_total"));
        assertTrue(delta(before, after, "vivarium_sandbox_lock_held_seconds_count") >= 2, "create and delete held the lock");
        assertTrue(delta(before, after, "vivarium_state_write_seconds_count") >= 2, "create wrote its record twice");
        assertTrue(delta(before, after, "vivarium_store_lock_held_seconds_count{store=\"file\"}") >= 3,
                "the store's commits are timed: create's two writes and delete's");
        assertEquals(1, value(after, "vivarium_store_up{store=\"file\"}").orElseThrow(), "the store's health, told before the "
                + "metrics bundle started, is there");

        String labels = "{backend=\"procbox\",sandbox=\"" + id + "\",tenant=\"default\"}";
        assertEquals(50000, value(during, "vivarium_sandbox_workspace_bytes" + labels).orElseThrow(), during);
        assertTrue(value(during, "vivarium_sandbox_resident_memory_bytes" + labels).orElseThrow() > 0, during);
        assertTrue(value(during, "vivarium_sandbox_cpu_seconds_total" + labels).isPresent(), during);
        assertTrue(value(during, "vivarium_sandboxes{backend=\"procbox\",status=\"running\",tier=\"hot\"}").orElseThrow() >= 1, during);
        assertEquals(1, value(during, "vivarium_backend_available{backend=\"procbox\"}").orElseThrow(), during);
        assertFalse(after.contains("sandbox=\"" + id + "\""), "a deleted sandbox's series are gone: " + after);
    }

    @Test
    void bundleUpdatesAreCountedByOutcomeAndTimed() throws Exception {
        String bundle = "test.metrics.probe";
        assertEquals(201, admin.sendBytes("POST", "/v1/plugins", BundleJars.bundle(bundle, "1.0.0", null)).status());
        try {
            assertEquals(200, admin.sendBytes("PUT", "/v1/plugins/" + bundle, BundleJars.bundle(bundle, "1.1.0", null)).status());
            assertEquals(400, admin.sendBytes("PUT", "/v1/plugins/" + bundle,
                    BundleJars.bundle(bundle, "1.2.0", "no.such.pkg")).status());
            String text = scrape();
            assertEquals(1, value(text, "vivarium_bundle_updates_total{bundle=\"" + bundle + "\",outcome=\"ok\"}").orElseThrow(), text);
            assertEquals(1, value(text, "vivarium_bundle_updates_total{bundle=\"" + bundle + "\",outcome=\"failed\"}").orElseThrow(), text);
            assertEquals(2, value(text, "vivarium_bundle_update_duration_seconds_count{bundle=\"" + bundle + "\"}").orElseThrow(), text);
        } finally {
            admin.delete("/v1/plugins/" + bundle);
        }
    }

    @Test
    void promtoolAcceptsTheScrape() throws Exception {
        Optional<Path> promtool = Stream.of(System.getenv("PATH").split(File.pathSeparator))
                .map(d -> Path.of(d, "promtool")).filter(Files::isExecutable).findFirst();
        Assumptions.assumeTrue(promtool.isPresent(), "needs promtool (apt-get install prometheus; .ci/run installs it)");
        String id = admin.createSandbox();
        try {
            admin.outsideTheContract().get("/v1/no-such-route");
            Path file = dir.resolve("scrape.txt");
            Files.writeString(file, scrape());
            Process p = new ProcessBuilder(promtool.get().toString(), "check", "metrics").redirectErrorStream(true)
                    .redirectInput(file.toFile()).start();
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "promtool did not finish");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), "promtool check metrics: " + out);
        } finally {
            admin.delete("/v1/sandboxes/" + id);
        }
    }

    @Test
    void withoutTheFeatureThereIsNoMetricsAndEverythingElseWorks() throws Exception {
        Daemon plain = daemons.start(dir.resolve("plain-state"), List.of("--features", "core,api-v1,procbox"));
        Api api = new Api(plain.baseUrl(), plain.adminToken());
        assertNoMetrics(api);
        String id = api.createSandbox();
        assertEquals("hi\n", Api.sh(api, id, "echo hi"));
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }

    @Test
    void disablingTheFeatureAtRunTimeRemovesMetricsAndEnablingBringsItBack() throws Exception {
        Daemon d = daemons.start(dir.resolve("toggle-state"), List.of());
        Api api = new Api(d.baseUrl(), d.adminToken());
        assertEquals(200, api.raw("GET", "/metrics", null).statusCode());
        assertEquals(200, api.post("/v1/features/metrics/disable", "").status());
        assertNoMetrics(api);
        String id = api.createSandbox();
        assertEquals("hi\n", Api.sh(api, id, "echo hi"));
        assertEquals(200, api.post("/v1/features/metrics/enable", "").status());
        String text = new String(api.raw("GET", "/metrics", null).body(), StandardCharsets.UTF_8);
        assertTrue(text.contains("sandbox=\"" + id + "\""), "core's sandboxes are measured again: " + text);
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        String later = new String(api.raw("GET", "/metrics", null).body(), StandardCharsets.UTF_8);
        assertEquals(1, value(later, "vivarium_sandbox_deletes_total").orElseThrow(), "the new observer is bound: " + later);
    }

    private static void assertNoMetrics(Api api) throws IOException, InterruptedException {
        Api.Response r = api.get("/metrics");
        assertEquals(404, r.status(), r.raw().body());
        assertTrue(r.error().contains("no route for /metrics"), r.error());
    }

    private static String scrape() throws IOException, InterruptedException {
        HttpResponse<byte[]> r = admin.raw("GET", "/metrics", null);
        assertEquals(200, r.statusCode());
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    /** The value of one series (its name and labels exactly as exposed), if it is there. */
    private static Optional<Double> value(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " ")).findFirst()
                .map(l -> Double.parseDouble(l.substring(series.length() + 1).trim()));
    }

    /** How much a series grew; a series not there yet counts as 0. */
    private static double delta(String before, String after, String series) {
        return value(after, series).orElseThrow(() -> new AssertionError(series + " is not in " + after))
                - value(before, series).orElse(0.0);
    }
}
