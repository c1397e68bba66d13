package io.vivarium.api;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The machine view of sandboxes, provided by core for {@code /v1/vms}: a VM is a sandbox whose
 * backend runs machines ({@link BackendInfo#machine()}), with the same record,
 * id and tenant; a sandbox of another backend is not found here. Every method is scoped to the
 * caller's tenant and throws {@link ApiException} for what the caller can fix or retry.
 * Restore, checkpoint, stop and start exclude each other, dry-runs and execs on the same VM (409
 * while another runs). Method names carry {@code Vm} so that one component can provide this
 * and {@link SandboxService}. Since 1.3.
 */
@ProviderType
public interface VmService {

    /** Creates a VM; {@code request.backend()} is required and must run machines (400 otherwise). */
    SandboxInfo createVm(Caller caller, CreateSandboxRequest request);

    List<SandboxInfo> listVms(Caller caller);

    SandboxInfo getVm(Caller caller, String id);

    void deleteVm(Caller caller, String id);

    /** {@link #deleteVm(Caller, String)}, forcibly as {@link SandboxService#delete(Caller, String, boolean)} says. Since 2.8. */
    void deleteVm(Caller caller, String id, boolean force);

    /** Shuts the VM down, keeping its disk; 501 if its backend cannot, 409 if it is not running. */
    SandboxInfo stopVm(Caller caller, String id);

    /** Starts a stopped VM; 409 if it is not stopped. */
    SandboxInfo startVm(Caller caller, String id);

    /**
     * Checkpoints the VM under a tag ({@code POST /v1/vms/{id}/snapshot}, the reference API's
     * route: instance-local state, not a registry snapshot); 400 bad tag, 409 tag taken, 501 if its
     * backend cannot. Since 2.0 (was {@code snapshotVm}).
     */
    CheckpointInfo checkpointVm(Caller caller, String id, CheckpointRequest request);

    /** Returns the VM to a checkpoint, in place; 400 bad tag, 404 unknown tag, 501 if its backend cannot. */
    SandboxInfo restoreVm(Caller caller, String id, CheckpointRequest request);

    /** The VM's checkpoints, oldest first: tag, when, size, storage mode; 501 if its backend has none. Since 2.0. */
    List<CheckpointInfo> listVmCheckpoints(Caller caller, String id);

    /** Deletes one of the VM's checkpoints: 404 unknown tag, 409 while in use (a restore or dry-run runs). Since 2.0. */
    void deleteVmCheckpoint(Caller caller, String id, String tag);
}
