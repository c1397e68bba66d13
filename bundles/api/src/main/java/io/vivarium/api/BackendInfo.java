package io.vivarium.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import io.vivarium.api.spi.Capabilities;

/**
 * One entry of {@code GET /v1/backends}.
 *
 * @param name backend name ({@code vivarium.backend} service property)
 * @param bundle symbolic name of the bundle providing it
 * @param version that bundle's version
 * @param capabilities what the backend can do
 * @param available whether it can create sandboxes on this host now
 * @param reason why not, when unavailable; when available, what runs degraded on this host (null when nothing)
 * @param sandboxes how many sandboxes it runs
 * @param details what a person needs to know about how it runs here: accelerator chosen and why,
 *        platform, agent kind, isolation ({@link io.vivarium.api.spi.SandboxBackend#details()});
 *        empty when the backend says nothing; since 1.3
 */
public record BackendInfo(String name, String bundle, String version, Capabilities capabilities,
        boolean available, String reason, int sandboxes, Map<String, String> details) {

    public BackendInfo {
        details = details == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(details));
    }

    /** The record of API 1.2. */
    public BackendInfo(String name, String bundle, String version, Capabilities capabilities, boolean available,
            String reason, int sandboxes) {
        this(name, bundle, version, capabilities, available, reason, sandboxes, Map.of());
    }
}
