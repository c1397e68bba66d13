package io.vivarium.api;

import java.util.List;
import java.util.Optional;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Sandbox orchestration, provided by core and used by API surfaces. Every method is scoped to the
 * caller's tenant: another tenant's sandbox is reported as not found. Methods throw
 * {@link ApiException} for anything the caller can fix or retry.
 */
@ProviderType
public interface SandboxService {

    SandboxInfo create(Caller caller, CreateSandboxRequest request);

    List<SandboxInfo> list(Caller caller);

    SandboxInfo get(Caller caller, String id);

    void delete(Caller caller, String id);

    /**
     * {@link #delete(Caller, String)}, or with {@code force} without what needs the sandbox's
     * cooperation to keep data it still holds (a VM's freeze of its writable volumes): for a
     * sandbox that cannot give it. Since 2.8.
     */
    void delete(Caller caller, String id, boolean force);

    PingResult ping(Caller caller, String id);

    ExecResult exec(Caller caller, String id, ExecRequest request);

    /**
     * Evaluates Python in the sandbox's warm interpreter, which keeps its state between calls. An
     * exception the code raises is a result with {@link EvalResult#error()}, not an
     * {@link ApiException}; a timeout replaces the interpreter (its state is lost, the error says
     * so). 400 for a missing or oversized code or a bad timeout, 409 while the sandbox is paused or
     * stopped or another eval runs, 422 if the sandbox has no Python, 501 if its backend has no
     * interpreter. Since 1.3.
     */
    EvalResult eval(Caller caller, String id, EvalRequest request);

    /**
     * Freezes every process of the sandbox (a VM's virtual CPUs), its memory kept, until
     * {@link #resume}; meanwhile exec, files, dry-run and the VM operations are 409. Pausing a
     * paused sandbox returns it as it is; 409 while another exclusive operation runs, 501 if its
     * backend cannot pause. Since 1.3.
     */
    SandboxInfo pause(Caller caller, String id);

    /** Runs a paused sandbox again; resuming a running one returns it as it is. Since 1.3. */
    SandboxInfo resume(Caller caller, String id);

    /**
     * Saves the whole state of the sandbox (memory, processes, files) under a tag, local to it
     * ({@link Capability#CHECKPOINTS}; not a registry snapshot). 400 bad tag, 409 tag taken or
     * another exclusive operation running, 501 if its backend has no checkpoints. Since 2.0.
     */
    CheckpointInfo checkpoint(Caller caller, String id, CheckpointRequest request);

    /**
     * Returns the sandbox to its checkpoint {@code tag}: processes started since are gone. 404
     * unknown tag, 409 while another exclusive operation runs, 501 if its backend has no
     * checkpoints. Since 2.0.
     */
    SandboxInfo restoreCheckpoint(Caller caller, String id, String tag);

    /** The sandbox's checkpoints, oldest first; 501 if its backend has none. Since 2.0. */
    List<CheckpointInfo> checkpoints(Caller caller, String id);

    /**
     * Deletes the checkpoint {@code tag} and frees what it holds: 404 unknown tag, 409 while a
     * restore, dry-run or another exclusive operation runs on the sandbox. Since 2.0.
     */
    void deleteCheckpoint(Caller caller, String id, String tag);

    List<BackendInfo> backends();

    /**
     * Every tenant's sandboxes, each with its usage where its backend measures it: for operators'
     * tools such as metrics, never for a request's caller (that is {@link #list}). Since 1.3.
     */
    List<SandboxInfo> census();

    /** Records the regular files under the given directories, replacing any earlier baseline. */
    BaselineResult baseline(Caller caller, String id, BaselineRequest request);

    /** Compares the files now with the baseline; {@code request} may be null. */
    ChangeSet changes(Caller caller, String id, ChangesRequest request);

    /** Runs a command, reports what it changed, and discards its effects. */
    DryRunResult dryRun(Caller caller, String id, DryRunRequest request);

    /** The largest file {@link #readFile} returns and {@link #writeFile} accepts: 64 MiB. Since 1.3. */
    int MAX_FILE_BYTES = 64 << 20;

    /**
     * A file inside the sandbox, read by the sandbox user (a symlink resolves inside the sandbox,
     * never on the host). {@code path} is absolute, without {@code ..} segments or control
     * characters (400 otherwise); 404 if there is no such regular file, 413 if it is larger than
     * {@link #MAX_FILE_BYTES}. Since 1.3.
     */
    byte[] readFile(Caller caller, String id, String path);

    /**
     * Writes a file inside the sandbox as the sandbox user, atomically (a reader sees the old or
     * the new content, never a part), replacing any file there. Paths as for {@link #readFile};
     * 404 if its directory does not exist, 413 past {@link #MAX_FILE_BYTES}. Since 1.3.
     */
    void writeFile(Caller caller, String id, String path, byte[] content);

    /**
     * The daemon that runs the caller's sandbox {@code id}, when it is another one that the routes
     * which only reach into the sandbox (ping, exec, eval, files, baseline, changes, dry-run) may be passed
     * on to as they came, its answer being theirs; empty to serve them here, through this service.
     * 404 for another tenant's sandbox, 503 (with a retry) while that daemon is away. Since 2.13.
     */
    default Optional<Relay> relay(Caller caller, String id) {
        return Optional.empty();
    }
}
