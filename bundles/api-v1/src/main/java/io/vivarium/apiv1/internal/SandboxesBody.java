package io.vivarium.apiv1.internal;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.IdlePolicy;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.VolumeMount;

/**
 * The body of {@code POST /v1/sandboxes}, which has two forms: a fresh sandbox
 * ({@link CreateSandboxRequest}'s fields) or, with {@code snapshot_tag}, {@code n} children of a
 * snapshot ({@link ForkRequest}'s). Bound whole, so that an unknown field is still a 400; a field of
 * one form sent with the other is a 400 naming it.
 */
public record SandboxesBody(String backend, Integer memoryLimitMib, Integer vcpus, String image, Integer pidsLimit,
        Integer diskLimitMib, String snapshotTag, Integer n, Boolean perChildNetns, Boolean liveFork,
        Boolean hugepages, String nodeId, NetworkPolicy network, List<VolumeMount> volumes, IdlePolicy idle, String template) {

    boolean fork() {
        return snapshotTag != null || n != null || perChildNetns != null || liveFork != null || hugepages != null;
    }

    ForkRequest forkRequest() {
        if (snapshotTag == null) {
            throw ApiException.badRequest("snapshot_tag is required to fork children (n, per_child_netns, "
                    + "live_fork and hugepages belong to a fork)");
        }
        String stray = backend != null ? "backend" : vcpus != null ? "vcpus" : image != null ? "image"
                : pidsLimit != null ? "pids_limit" : diskLimitMib != null ? "disk_limit_mib" : null;
        if (stray != null) {
            throw ApiException.badRequest(stray + " cannot be set on a fork: children take the snapshot's "
                    + "backend and workspace; leave it out");
        }
        if (volumes != null && !volumes.isEmpty()) {
            throw ApiException.badRequest("volumes cannot be set on a fork: a volume has one writer, and children are many; "
                    + "create sandboxes that mount it instead");
        }
        if (template != null) {
            throw ApiException.badRequest("template cannot be set on a fork: children take the snapshot's root; leave it out");
        }
        if (idle != null) {
            throw ApiException.badRequest("idle cannot be set on a fork: children get the operator's idle policy; leave it out");
        }
        if (network != null) {
            throw ApiException.badRequest("network cannot be set on a fork: children take the network of the sandbox the"
                    + " snapshot was branched from (the operator's default for a built one); leave it out");
        }
        return new ForkRequest(snapshotTag, n, perChildNetns, memoryLimitMib, liveFork, hugepages, nodeId);
    }

    CreateSandboxRequest createRequest() {
        return new CreateSandboxRequest(backend, memoryLimitMib, vcpus, image, pidsLimit, diskLimitMib, nodeId, network, volumes, idle,
                template);
    }
}
