package io.vivarium.metrics.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;

import org.junit.jupiter.api.Test;

class VivariumMetricsTest {

    private static final List<String> SANDBOX = List.of("exec");

    private final List<SandboxInfo> sandboxes = new ArrayList<>();
    private final List<BackendInfo> backends = new ArrayList<>();
    private final VivariumMetrics metrics = new VivariumMetrics(() -> List.copyOf(sandboxes), () -> List.copyOf(backends));

    private String scrape() {
        return new String(metrics.scrape(), StandardCharsets.UTF_8);
    }

    @Test
    void requestsAreCountedAndTimedByMethodRouteAndStatusClass() {
        metrics.requestCompleted("GET", "/v1/sandboxes/{id}", 200, 2_000_000);
        metrics.requestCompleted("GET", "/v1/sandboxes/{id}", 204, 1_000_000);
        metrics.requestCompleted("GET", "/v1/sandboxes/{id}", 404, 1_000_000);
        metrics.requestCompleted("POST", "unmatched", 401, 1_000_000);
        String text = scrape();
        assertTrue(text.contains("vivarium_http_requests_total{class=\"success\",method=\"GET\",route=\"/v1/sandboxes/{id}\"} 2.0"), text);
        assertTrue(text.contains("vivarium_http_requests_total{class=\"client_error\",method=\"GET\",route=\"/v1/sandboxes/{id}\"} 1.0"), text);
        assertTrue(text.contains("vivarium_http_requests_total{class=\"client_error\",method=\"POST\",route=\"unmatched\"} 1.0"), text);
        assertTrue(text.contains("vivarium_http_request_duration_seconds_count{class=\"success\",method=\"GET\",route=\"/v1/sandboxes/{id}\"} 2"), text);
        assertTrue(text.contains("vivarium_http_request_duration_seconds_sum{class=\"success\",method=\"GET\",route=\"/v1/sandboxes/{id}\"} 0.003"), text);
        assertTrue(text.contains("vivarium_http_request_duration_seconds_bucket{class=\"success\",method=\"GET\",route=\"/v1/sandboxes/{id}\",le=\"0.001\"} 1"), text);
    }

    @Test
    void everyCreateOutcomeIsASeriesFromTheStart() {
        metrics.sandboxCreated(CreateOutcome.REFUSED);
        metrics.sandboxCreated(CreateOutcome.OK);
        metrics.sandboxCreated(CreateOutcome.OK);
        metrics.sandboxDeleted();
        metrics.sandboxDemoted("warm");
        String text = scrape();
        assertTrue(text.contains("vivarium_demotions_total{to=\"warm\"} 1.0"), text);
        assertTrue(text.contains("vivarium_sandbox_creates_total{outcome=\"ok\"} 2.0"), text);
        assertTrue(text.contains("vivarium_sandbox_creates_total{outcome=\"refused\"} 1.0"), text);
        assertTrue(text.contains("vivarium_sandbox_creates_total{outcome=\"invalid\"} 0.0"), text);
        assertTrue(text.contains("vivarium_sandbox_creates_total{outcome=\"failed\"} 0.0"), text);
        assertTrue(text.contains("vivarium_sandbox_deletes_total 1.0"), text);
    }

    @Test
    void sandboxesAreCountedByBackendAndStatusWithTheirUsage() {
        sandboxes.add(sandbox("a1", "alice", "running", new ResourceUsage(4096L, 1.5, 8192L)));
        sandboxes.add(sandbox("a2", "alice", "running", null));
        sandboxes.add(sandbox("b1", "bob", "failed", new ResourceUsage(null, 0.25, null)));
        sandboxes.add(sandbox("b2", "bob", "paused", null));
        String text = scrape();
        assertTrue(text.contains("vivarium_sandboxes{backend=\"procbox\",status=\"running\",tier=\"hot\"} 2"), text);
        assertTrue(text.contains("vivarium_sandboxes{backend=\"procbox\",status=\"paused\",tier=\"warm\"} 1"), text);
        assertTrue(text.contains("vivarium_sandboxes{backend=\"procbox\",status=\"failed\",tier=\"none\"} 1"), text);
        assertTrue(text.contains("vivarium_sandbox_resident_memory_bytes{backend=\"procbox\",sandbox=\"a1\",tenant=\"alice\"} 4096"), text);
        assertTrue(text.contains("vivarium_sandbox_workspace_bytes{backend=\"procbox\",sandbox=\"a1\",tenant=\"alice\"} 8192"), text);
        assertTrue(text.contains("vivarium_sandbox_cpu_seconds_total{backend=\"procbox\",sandbox=\"b1\",tenant=\"bob\"} 0.25"), text);
        assertFalse(text.contains("sandbox=\"a2\""), "a sandbox without usage has no usage series: " + text);
        assertFalse(text.contains("vivarium_sandbox_resident_memory_bytes{backend=\"procbox\",sandbox=\"b1\""),
                "a figure the backend did not measure is no series: " + text);

        sandboxes.clear();
        String after = scrape();
        assertFalse(after.contains("sandbox=\"a1\""), "a deleted sandbox's series go: " + after);
        assertFalse(after.contains("vivarium_sandboxes{"), after);
    }

    @Test
    void backendAvailabilityIsOneOrZero() {
        backends.add(new BackendInfo("procbox", "io.vivarium.backend-procbox", "0.1.0", SANDBOX, false, true, null, 0, Map.of()));
        backends.add(new BackendInfo("qemu", "io.vivarium.backend-qemu", "0.1.0", SANDBOX, true, false, "no qemu", 0, Map.of()));
        String text = scrape();
        assertTrue(text.contains("vivarium_backend_available{backend=\"procbox\"} 1"), text);
        assertTrue(text.contains("vivarium_backend_available{backend=\"qemu\"} 0"), text);
    }

    @Test
    void locksStateWritesAndBundleUpdatesAreTimed() {
        metrics.lifecycleLockReleased(30_000, 2_000_000_000L);
        metrics.stateWritten(700_000);
        metrics.bundleUpdated("io.vivarium.backend-procbox", true, 1_500_000_000L);
        metrics.bundleUpdated("io.vivarium.backend-procbox", false, 500_000_000L);
        String text = scrape();
        assertTrue(text.contains("vivarium_sandbox_lock_wait_seconds_bucket{le=\"5.0E-5\"} 1"), text);
        assertTrue(text.contains("vivarium_sandbox_lock_held_seconds_bucket{le=\"1.0\"} 0"), text);
        assertTrue(text.contains("vivarium_sandbox_lock_held_seconds_bucket{le=\"2.5\"} 1"), text);
        assertTrue(text.contains("vivarium_state_write_seconds_count 1"), text);
        assertTrue(text.contains("vivarium_bundle_updates_total{bundle=\"io.vivarium.backend-procbox\",outcome=\"ok\"} 1.0"), text);
        assertTrue(text.contains("vivarium_bundle_updates_total{bundle=\"io.vivarium.backend-procbox\",outcome=\"failed\"} 1.0"), text);
        assertTrue(text.contains("vivarium_bundle_update_duration_seconds_sum{bundle=\"io.vivarium.backend-procbox\"} 2.0"), text);
    }

    @Test
    void statusClassesAreTheSeedsNames() {
        assertEquals("success", VivariumMetrics.statusClass(201));
        assertEquals("client_error", VivariumMetrics.statusClass(413));
        assertEquals("server_error", VivariumMetrics.statusClass(503));
    }

    private static SandboxInfo sandbox(String id, String tenant, String status, ResourceUsage usage) {
        String tier = status.equals("running") ? "hot" : status.equals("paused") ? "warm" : null;
        return new SandboxInfo(id, "procbox", tenant, status, 0, 0, null, "/work", null, null, null, usage, null, null, null,
                tier, null);
    }
}
