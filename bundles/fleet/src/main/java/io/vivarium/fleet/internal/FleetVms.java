package io.vivarium.fleet.internal;

import java.util.Arrays;
import java.util.List;

import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.VmService;
import io.vivarium.fleet.internal.Forwarding.Remote;

/**
 * The machine view of sandboxes ({@code /v1/vms}) as the master serves it: a VM placed on a node is
 * driven through that node's VM routes (so a process sandbox is 404 there, as on one host); a
 * create goes to the least loaded node that has the backend named; every other VM is this
 * daemon's own. Placement, listing and deletes are {@link FleetSandboxes}'.
 */
final class FleetVms implements VmService {
    private final VmService local;
    private final Nodes nodes;
    private final FleetSandboxes sandboxes;
    private final Forwarding forwarding;

    FleetVms(VmService local, Nodes nodes, FleetSandboxes sandboxes, Forwarding forwarding) {
        this.local = local;
        this.nodes = nodes;
        this.sandboxes = sandboxes;
        this.forwarding = forwarding;
    }

    @Override
    public SandboxInfo createVm(Caller caller, CreateSandboxRequest request) {
        return nodes.any() ? sandboxes.createOnANode(caller, request, Forwarding.VMS) : local.createVm(caller, request);
    }

    @Override
    public List<SandboxInfo> listVms(Caller caller) {
        return sandboxes.listWith(caller, local.listVms(caller), Forwarding.VMS, false);
    }

    @Override
    public SandboxInfo getVm(Caller caller, String id) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.getVm(caller, id) : forwarding.call(r, "GET", "", caller, null, SandboxInfo.class);
    }

    @Override
    public void deleteVm(Caller caller, String id) {
        deleteVm(caller, id, false);
    }

    @Override
    public void deleteVm(Caller caller, String id, boolean force) {
        Remote r = forwarding.vm(caller, id);
        if (r == null) {
            local.deleteVm(caller, id, force);
        } else {
            sandboxes.deleteOnItsNode(r, caller, force);
        }
    }

    @Override
    public SandboxInfo stopVm(Caller caller, String id) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.stopVm(caller, id) : forwarding.call(r, "POST", "/stop", caller, null, SandboxInfo.class);
    }

    @Override
    public SandboxInfo startVm(Caller caller, String id) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.startVm(caller, id) : forwarding.call(r, "POST", "/start", caller, null, SandboxInfo.class);
    }

    @Override
    public CheckpointInfo checkpointVm(Caller caller, String id, CheckpointRequest request) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.checkpointVm(caller, id, request)
                : forwarding.call(r, "POST", "/snapshot", caller, request, CheckpointInfo.class);
    }

    @Override
    public SandboxInfo restoreVm(Caller caller, String id, CheckpointRequest request) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.restoreVm(caller, id, request)
                : forwarding.call(r, "POST", "/restore", caller, request, SandboxInfo.class);
    }

    @Override
    public List<CheckpointInfo> listVmCheckpoints(Caller caller, String id) {
        Remote r = forwarding.vm(caller, id);
        return r == null ? local.listVmCheckpoints(caller, id)
                : Arrays.asList(forwarding.call(r, "GET", "/checkpoints", caller, null, CheckpointInfo[].class));
    }

    @Override
    public void deleteVmCheckpoint(Caller caller, String id, String tag) {
        Remote r = forwarding.vm(caller, id);
        if (r == null) {
            local.deleteVmCheckpoint(caller, id, tag);
        } else {
            forwarding.call(r, "DELETE", "/checkpoints/" + Forwarding.segment(tag), caller, null, null);
        }
    }
}
