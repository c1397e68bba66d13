package io.vivarium.api;

/**
 * What {@code GET /v1/sandboxes/{id}} returns.
 *
 * @param id sandbox id
 * @param backend name of the backend running it
 * @param tenant tenant that owns it
 * @param status {@link SandboxStatus#wire()}
 * @param createdAtUnix creation time, seconds since the epoch
 * @param pid host pid of the sandbox's init process (0 if unknown)
 * @param memoryLimitMib the enforced memory limit, or null if none
 * @param workspace path of the writable workspace inside the sandbox
 * @param reason why the sandbox is not running, or null
 */
public record SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix,
        long pid, Integer memoryLimitMib, String workspace, String reason) {
}
