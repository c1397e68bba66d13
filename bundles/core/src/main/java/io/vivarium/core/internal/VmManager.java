package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.VmService;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The {@link VmService} ({@code /v1/vms}) as a component: {@link Vms} over the {@link Core} of the {@link SandboxManager}. */
@Component(service = VmService.class)
public class VmManager implements VmService {
    @Reference
    private SandboxManager manager;
    private Vms vms;

    @Activate
    void activate() {
        start(manager.core());
    }

    void start(Core core) {
        vms = new Vms(core.registry(), core.sandboxes(), core.lifecycle(), core.live(), core.checkpointing());
    }

    @Override
    public SandboxInfo createVm(Caller caller, CreateSandboxRequest request) {
        NodeChoice.refuse(request == null ? null : request.nodeId());
        return vms.create(caller, request);
    }

    @Override
    public List<SandboxInfo> listVms(Caller caller) {
        return vms.list(caller);
    }

    @Override
    public SandboxInfo getVm(Caller caller, String id) {
        return Usage.infoOf(vms.find(caller, id));
    }

    @Override
    public void deleteVm(Caller caller, String id) {
        vms.delete(caller, id, false);
    }

    @Override
    public void deleteVm(Caller caller, String id, boolean force) {
        vms.delete(caller, id, force);
    }

    @Override
    public SandboxInfo stopVm(Caller caller, String id) {
        return vms.stop(caller, id);
    }

    @Override
    public SandboxInfo startVm(Caller caller, String id) {
        return vms.start(caller, id);
    }

    @Override
    public CheckpointInfo checkpointVm(Caller caller, String id, CheckpointRequest request) {
        return vms.checkpoint(caller, id, request);
    }

    @Override
    public SandboxInfo restoreVm(Caller caller, String id, CheckpointRequest request) {
        return vms.restore(caller, id, request);
    }

    @Override
    public List<CheckpointInfo> listVmCheckpoints(Caller caller, String id) {
        return vms.checkpoints(caller, id);
    }

    @Override
    public void deleteVmCheckpoint(Caller caller, String id, String tag) {
        vms.deleteCheckpoint(caller, id, tag);
    }
}
