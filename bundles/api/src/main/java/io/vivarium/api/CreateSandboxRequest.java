package io.vivarium.api;

import java.util.List;

/**
 * Body of {@code POST /v1/sandboxes}. Every field is optional; a null backend means the configured
 * default backend, or the only registered one, and a null limit means the backend's default for it.
 * A backend that cannot honour a field (see its {@link BackendInfo#capabilities()}: {@link Capability#VCPUS},
 * {@link Capability#IMAGE}, the limits) makes the create a 400 naming it.
 *
 * @param backend name of the backend (see {@code GET /v1/backends})
 * @param memoryLimitMib memory limit for the whole sandbox, in MiB
 * @param vcpus virtual CPUs of a machine (1 to 64), or null for the backend's default; since 1.3
 * @param image name of the image or template the sandbox starts from (a guest image of a VM
 *        backend), or null for the backend's default; since 1.3
 * @param pidsLimit most processes and threads the sandbox may have at once; a fork bomb stops
 *        there; since 1.3
 * @param diskLimitMib size of the sandbox's workspace, in MiB; writing past it fails with ENOSPC
 *        inside the sandbox; since 1.3
 * @param nodeId the fleet node to create it on, on a master; a daemon that drives no nodes
 *        refuses it; since 2.1
 * @param network its network, or null for the operator's default; since 2.5
 * @param volumes the tenant's volumes to mount in it (none when null or empty); since 2.7
 * @param idle when it is demoted while idle, at most what the operator set; null for the operator's
 *        default; since 2.7
 * @param template the operator's template it is made from ({@link TemplateService}), which sets
 *        every other field but those it lets clients set; since 2.10
 */
public record CreateSandboxRequest(String backend, Integer memoryLimitMib, Integer vcpus, String image,
        Integer pidsLimit, Integer diskLimitMib, String nodeId, NetworkPolicy network, List<VolumeMount> volumes,
        IdlePolicy idle, String template) {

    public CreateSandboxRequest {
        // a null entry stays, for core to refuse with a 400 naming it
        volumes = volumes == null ? List.of() : java.util.Collections.unmodifiableList(new java.util.ArrayList<>(volumes));
    }

    /** The request of API 2.7 (no template). */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib, String nodeId, NetworkPolicy network, List<VolumeMount> volumes, IdlePolicy idle) {
        this(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, nodeId, network, volumes, idle, null);
    }

    /** The request of API 2.5 (no volumes). */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib, String nodeId, NetworkPolicy network) {
        this(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, nodeId, network, null, null);
    }

    /** The request of API 2.1 (no network). */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib, String nodeId) {
        this(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, nodeId, null, null, null);
    }

    /** The request of API 2.0 (no node). */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
            Integer diskLimitMib) {
        this(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, null, null, null, null);
    }

    /** The same request without a node: what a master sends the node it chose. */
    public CreateSandboxRequest onAnyNode() {
        return new CreateSandboxRequest(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, null, network, volumes,
                idle, template);
    }

    /** The request of API 1.2 (no vcpus, image or pids and disk limits). */
    public CreateSandboxRequest(String backend, Integer memoryLimitMib) {
        this(backend, memoryLimitMib, null, null, null, null, null, null, null, null);
    }
}
