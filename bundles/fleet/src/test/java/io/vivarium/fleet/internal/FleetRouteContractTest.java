package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.api.http.Route;

import org.junit.jupiter.api.Test;

/** The routes this bundle serves are documented in docs/openapi.json, with the role they check. */
class FleetRouteContractTest {

    @Test
    void everyRouteIsDocumentedWithItsRoleAndStatus() throws Exception {
        JsonNode paths = new ObjectMapper().readTree(Path.of("../../docs/openapi.json").toFile()).get("paths");
        FleetSurface fleet = new FleetSurface(null, null, () -> null, List::of);
        ImageSurface images = new ImageSurface(null, null);
        assertFalse(fleet.routes().isEmpty());
        assertEquals(fleet.prefix(), images.prefix());
        for (Route r : java.util.stream.Stream.concat(fleet.routes().stream(), images.routes().stream()).toList()) {
            String path = fleet.prefix() + r.template();
            JsonNode op = paths.path(path).path(r.method().toLowerCase(Locale.ROOT));
            assertFalse(op.isMissingNode(), r.method() + " " + path + " is not in docs/openapi.json");
            assertEquals(r.role().name().toLowerCase(Locale.ROOT), op.path("x-vivarium-role").asText(), path);
            assertTrue(op.path("responses").has(String.valueOf(r.status())), path + " answers " + r.status());
            assertTrue(op.path("responses").has("401") && op.path("responses").has("403"), path + ": 401/403 undocumented");
        }
    }
}
