package io.vivarium.api;

import java.util.List;

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
 * @param workspace path of the writable workspace inside the sandbox, or null while no instance of it runs
 *        (failed, or its backend not registered)
 * @param reason why the sandbox is not running, or null
 * @param vcpus the virtual CPUs asked for at create, or null for the backend's default; since 1.3
 * @param image the image or template asked for at create, or null for the backend's default; since 1.3
 * @param usage what the sandbox uses right now; only in the answer for one sandbox, and only when
 *        its backend measures it (null otherwise); since 1.3
 * @param snapshotTag the snapshot tag a forked child was made from (the reference API's
 *        {@code snapshot_tag}; its {@code image} is that tag too), or null for a sandbox that was
 *        created; since 1.3
 * @param network its network (mode and policy), or null where it is not known (a node's sandbox
 *        the master has not heard from); since 2.5
 * @param volumes the volumes mounted in it (empty for none); since 2.7
 * @param tier {@value #HOT} (running), {@value #WARM} (paused, memory kept: by a pause, or demoted
 *        while idle) or {@value #COLD}; null where it is not known; since 2.7
 * @param idle when it is demoted while idle, or null for never; since 2.7
 * @param template the operator's template it was made from (a forked child: the template of the
 *        sandbox its snapshot was branched from), or null; since 2.11
 */
public record SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix,
        long pid, Integer memoryLimitMib, String workspace, String reason, Integer vcpus, String image,
        ResourceUsage usage, String snapshotTag, NetworkPolicy network, List<VolumeMount> volumes, String tier,
        IdlePolicy idle, String template) {
    public static final String HOT = "hot";
    public static final String WARM = "warm";
    public static final String COLD = "cold";

    public SandboxInfo {
        volumes = volumes == null ? List.of() : List.copyOf(volumes);
    }

    /** The record before {@code template}. */
    public SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix, long pid,
            Integer memoryLimitMib, String workspace, String reason, Integer vcpus, String image, ResourceUsage usage,
            String snapshotTag, NetworkPolicy network, List<VolumeMount> volumes, String tier, IdlePolicy idle) {
        this(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason, vcpus, image, usage,
                snapshotTag, network, volumes, tier, idle, null);
    }

    /** The record before {@code volumes}, {@code tier} and {@code idle}. */
    public SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix, long pid,
            Integer memoryLimitMib, String workspace, String reason, Integer vcpus, String image, ResourceUsage usage,
            String snapshotTag, NetworkPolicy network) {
        this(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason, vcpus, image, usage,
                snapshotTag, network, null, null, null, null);
    }

    /** The record before {@code network}. */
    public SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix, long pid,
            Integer memoryLimitMib, String workspace, String reason, Integer vcpus, String image, ResourceUsage usage,
            String snapshotTag) {
        this(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason, vcpus, image, usage,
                snapshotTag, null, null, null, null, null);
    }

    /** The record before {@code snapshotTag}. */
    public SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix, long pid,
            Integer memoryLimitMib, String workspace, String reason, Integer vcpus, String image, ResourceUsage usage) {
        this(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason, vcpus, image, usage,
                null, null, null, null, null, null);
    }

    /** The record of API 1.2. */
    public SandboxInfo(String id, String backend, String tenant, String status, long createdAtUnix, long pid,
            Integer memoryLimitMib, String workspace, String reason) {
        this(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason, null, null, null, null, null,
                null, null, null, null);
    }

    /** This record with {@code usage} set. */
    public SandboxInfo withUsage(ResourceUsage usage) {
        return new SandboxInfo(id, backend, tenant, status, createdAtUnix, pid, memoryLimitMib, workspace, reason,
                vcpus, image, usage, snapshotTag, network, volumes, tier, idle, template);
    }
}
