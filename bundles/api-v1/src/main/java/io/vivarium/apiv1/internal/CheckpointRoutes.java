package io.vivarium.apiv1.internal;

import java.util.List;

import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxService;
import io.vivarium.api.VmService;
import io.vivarium.api.http.Route;

/**
 * Checkpoints: an instance's own saved state, taken, restored, listed and deleted in place (never
 * a registry snapshot, which is {@link SnapshotRoutes}). Admin-only, as they read and replace what
 * runs inside. {@code POST /vms/{id}/snapshot} keeps the reference API's name for taking a VM's
 * checkpoint.
 */
final class CheckpointRoutes {

    private CheckpointRoutes() {
    }

    static List<Route> of(SandboxService sandboxes, VmService vms) {
        return List.of(
                new Route("GET", "/sandboxes/{id}/checkpoints", Role.ADMIN, 200,
                        r -> sandboxes.checkpoints(r.caller(), r.pathParam("id"))),
                new Route("POST", "/sandboxes/{id}/checkpoints", Role.ADMIN, 201,
                        r -> sandboxes.checkpoint(r.caller(), r.pathParam("id"), r.body(CheckpointRequest.class))),
                new Route("POST", "/sandboxes/{id}/checkpoints/{tag}/restore", Role.ADMIN, 200,
                        r -> sandboxes.restoreCheckpoint(r.caller(), r.pathParam("id"), r.pathParam("tag"))),
                new Route("DELETE", "/sandboxes/{id}/checkpoints/{tag}", Role.ADMIN, 204, r -> {
                    sandboxes.deleteCheckpoint(r.caller(), r.pathParam("id"), r.pathParam("tag"));
                    return null;
                }),
                new Route("POST", "/vms/{id}/snapshot", Role.ADMIN, 201,
                        r -> vms.checkpointVm(r.caller(), r.pathParam("id"), r.body(CheckpointRequest.class))),
                new Route("POST", "/vms/{id}/restore", Role.ADMIN, 200,
                        r -> vms.restoreVm(r.caller(), r.pathParam("id"), r.body(CheckpointRequest.class))),
                new Route("GET", "/vms/{id}/checkpoints", Role.ADMIN, 200,
                        r -> vms.listVmCheckpoints(r.caller(), r.pathParam("id"))),
                new Route("DELETE", "/vms/{id}/checkpoints/{tag}", Role.ADMIN, 204, r -> {
                    vms.deleteVmCheckpoint(r.caller(), r.pathParam("id"), r.pathParam("tag"));
                    return null;
                }));
    }
}
