package io.vivarium.api.spi;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Instance-local checkpoints: the whole state of one running instance (memory, devices, disk)
 * saved under a tag and restored into the same instance. An optional seam: the backend's bundle
 * registers it as a service of its own with the backend's {@value SandboxBackend#NAME_PROPERTY},
 * and core derives {@link io.vivarium.api.Capability#CHECKPOINTS} and
 * {@link io.vivarium.api.Capability#DRY_RUN} (core dry-runs through checkpoints) from it. Not the
 * forkable, shared snapshots of the registry, which are {@link Images}.
 *
 * <p>Every method is handed an instance of this backend (the revision that registered this
 * service created or adopted it). Tags reach the backend already checked by core: plain names of
 * letters, digits, {@code .}, {@code _} and {@code -}, at most 64, starting with a letter or digit
 * ({@link #TAG}). Core serialises every call of this interface with each other and with execs on
 * the same instance, so an implementation needs no locking of its own against them; it is called
 * from request threads, never holding core's lifecycle lock.
 *
 * <p><b>Crash safety.</b> A checkpoint is registered atomically: after a {@code kill -9} of the
 * daemon at any point of {@link #create}, {@link #list} (of the re-adopted instance) either
 * shows the complete checkpoint or none (stage the files, rename into place last). Core records
 * its own dry-run checkpoints in an intent before it takes them and deletes them at start-up.
 * Since 1.3; a service taking the instance since 2.0.
 */
@ConsumerType
public interface Checkpoints {

    /** The form of a tag, as a regular expression. */
    String TAG = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";

    /**
     * Saves the instance's state under {@code tag}. The instance keeps running (it may be paused
     * for the moment the state is written). Throws {@link ApiException} 409 if the tag exists,
     * 503/504 as {@link OperationContext#checkpoint(String)} does; a failure leaves no checkpoint.
     *
     * @return what was saved and the storage mode actually used
     */
    CheckpointInfo create(SandboxInstance instance, String tag, OperationContext context);

    /**
     * Returns the instance to the state saved under {@code tag}: memory, running processes and
     * disk, so processes started since are gone. In place where the backend can (QEMU
     * {@code loadvm}), else by relaunching the instance from the checkpoint. A stopped instance is
     * started from it. The checkpoint stays and can be restored again.
     *
     * <p>Returns the instance that runs afterwards: {@code instance} when restored in place, or a
     * new one after a relaunch, whose {@link SandboxInstance#state()} core persists before it
     * answers. A relaunching backend must also let {@link SandboxBackend#adopt} find the relaunched
     * process when handed the state from before the restore (the daemon may die between the
     * relaunch and core's write): keep what identifies it under {@link InstanceSpec#dir()}.
     * Throws {@link ApiException} 404 for an unknown tag; any other failure means the instance may
     * be in either state, and the message must say so.
     */
    SandboxInstance restore(SandboxInstance instance, String tag, OperationContext context);

    /** Deletes the checkpoint and frees what it holds; false if there was none. */
    boolean delete(SandboxInstance instance, String tag);

    /** Every checkpoint of the instance, oldest first. */
    List<CheckpointInfo> list(SandboxInstance instance);
}
