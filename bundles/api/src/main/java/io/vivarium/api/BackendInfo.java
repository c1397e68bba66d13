package io.vivarium.api;

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
 */
public record BackendInfo(String name, String bundle, String version, Capabilities capabilities,
        boolean available, String reason, int sandboxes) {
}
