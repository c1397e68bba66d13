package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class ProvidesTest {

    @Test
    void namesTheVivariumSeams() {
        assertEquals(List.of("backend:procbox"), Provides.of(List.of("io.vivarium.api.spi.SandboxBackend"),
                Map.of("vivarium.backend", "procbox")::get, () -> null));
        assertEquals(List.of("fingerprint:sha256"), Provides.of(List.of("io.vivarium.api.spi.FingerprintMode"),
                Map.of("vivarium.fingerprint", "sha256")::get, () -> null));
        assertEquals(List.of("api:/v1"), Provides.of(List.of("io.vivarium.api.http.ApiSurface"), k -> null, () -> "/v1"));
        assertEquals(List.of("service:sandboxes", "service:plugins"), Provides.of(
                List.of("io.vivarium.api.SandboxService", "io.vivarium.api.PluginService"), k -> null, () -> null));
        assertEquals(List.of(), Provides.of(List.of("jakarta.servlet.Servlet", "io.vivarium.api.spi.SandboxBackend"),
                k -> null, () -> null), "other services, and a backend without its name property, provide no seam");
    }
}
