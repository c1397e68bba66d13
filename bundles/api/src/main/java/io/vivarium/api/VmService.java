package io.vivarium.api;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The machine view of sandboxes, provided by core for {@code /v1/vms}: a VM is a sandbox whose
 * backend runs machines ({@link io.vivarium.api.spi.Capabilities#vcpus()}), with the same record,
 * id and tenant; a sandbox of another backend is not found here. Every method is scoped to the
 * caller's tenant and throws {@link ApiException} for what the caller can fix or retry.
 * Restore, snapshot, stop and start exclude each other, dry-runs and execs on the same VM (409
 * while another runs). Since 1.3.
 */
@ProviderType
public interface VmService {

    /** Creates a VM; {@code request.backend()} is required and must run machines (400 otherwise). */
    SandboxInfo create(Caller caller, CreateSandboxRequest request);

    List<SandboxInfo> list(Caller caller);

    SandboxInfo get(Caller caller, String id);

    void delete(Caller caller, String id);

    /** Shuts the VM down, keeping its disk; 501 if its backend cannot, 409 if it is not running. */
    SandboxInfo stop(Caller caller, String id);

    /** Starts a stopped VM; 409 if it is not stopped. */
    SandboxInfo start(Caller caller, String id);

    /** Checkpoints the VM under a tag; 400 bad tag, 409 tag taken, 501 if its backend cannot. */
    CheckpointInfo snapshot(Caller caller, String id, CheckpointRequest request);

    /** Returns the VM to a checkpoint, in place; 400 bad tag, 404 unknown tag, 501 if its backend cannot. */
    SandboxInfo restore(Caller caller, String id, CheckpointRequest request);
}
