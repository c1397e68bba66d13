package io.vivarium.api;

/**
 * Body of {@code POST /v1/sandboxes}. Every field is optional; a null backend means the
 * configured default backend.
 *
 * @param backend name of the backend (see {@code GET /v1/backends})
 * @param memoryLimitMib memory limit for the whole sandbox, in MiB
 */
public record CreateSandboxRequest(String backend, Integer memoryLimitMib) {
}
