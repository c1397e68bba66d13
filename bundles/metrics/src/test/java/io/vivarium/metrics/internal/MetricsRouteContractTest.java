package io.vivarium.metrics.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.api.http.Route;

import org.junit.jupiter.api.Test;

/** The routes this bundle serves are documented in docs/openapi.json, with the role they check. */
class MetricsRouteContractTest {

    @Test
    void everyRouteIsDocumentedWithItsRoleAndStatus() throws Exception {
        // routes only: nothing is scraped, so no SandboxService is needed
        JsonNode paths = new ObjectMapper().readTree(Path.of("../../docs/openapi.json").toFile()).get("paths");
        MetricsComponent metrics = new MetricsComponent(null);
        assertFalse(metrics.routes().isEmpty());
        for (Route r : metrics.routes()) {
            String path = metrics.prefix() + r.template();
            JsonNode op = paths.path(path).path(r.method().toLowerCase(Locale.ROOT));
            assertFalse(op.isMissingNode(), r.method() + " " + path + " is not in docs/openapi.json");
            assertEquals(r.role().name().toLowerCase(Locale.ROOT), op.path("x-vivarium-role").asText(), path);
            assertTrue(op.path("responses").has(String.valueOf(r.status())), path + " answers " + r.status());
            assertTrue(op.path("responses").has("401") && op.path("responses").has("403"), path + ": 401/403 undocumented");
        }
    }
}
