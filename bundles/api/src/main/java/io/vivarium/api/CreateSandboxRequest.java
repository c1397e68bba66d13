package io.vivarium.api;

/**
 * Body of {@code POST /v1/sandboxes}. Every field is optional; a null backend means the
 * configured default backend, and a null limit means the backend's default for it.
 *
 * @param backend name of the backend (see {@code GET /v1/backends})
 * @param memoryLimitMib memory limit for the whole sandbox, in MiB
 * @param pidsLimit most processes and threads the sandbox may have at once; a fork bomb stops there
 * @param diskLimitMib size of the sandbox's workspace, in MiB; writing past it fails with ENOSPC
 *        inside the sandbox
 */
public record CreateSandboxRequest(String backend, Integer memoryLimitMib,
        // limits added in 1.3 (issue 7)
        Integer pidsLimit, Integer diskLimitMib) {

    /** The 1.2 shape, without the pids and disk limits. */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib) {
        this(backend, memoryLimitMib, null, null);
    }
}
