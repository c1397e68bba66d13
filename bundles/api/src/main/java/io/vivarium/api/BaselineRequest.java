package io.vivarium.api;

import java.util.List;

/**
 * Body of {@code POST /v1/sandboxes/{id}/baseline}.
 *
 * @param paths absolute directories inside the sandbox (at most 64, each at most 4096 bytes)
 */
public record BaselineRequest(List<String> paths) {
}
