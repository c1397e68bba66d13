package io.vivarium.api.spi;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The way into a running instance. For a process sandbox this enters its namespaces; for a VM it
 * speaks the QEMU Guest Agent protocol (guest-exec, guest-file-*, guest-fsfreeze-*) over
 * virtio-serial or vsock, plus Vivarium's extensions such as eval.
 *
 * <p>Implementations must be safe to call from several threads at once: core serialises lifecycle
 * operations, not execs. Optional operations throw {@link ApiException} 501 by default, and the
 * backend's {@link Capabilities} say which are there.
 */
@ConsumerType
public interface GuestChannel {

    /** Round trip to the instance; throws {@link ApiException} 502/503 if it does not answer. */
    PingResult ping();

    /**
     * Runs a command with every field of the request already filled in and validated by core.
     * Arguments are passed as argv, never through a shell. On timeout the whole process group is
     * killed and {@link ExecResult#timedOut()} is true; output past the cap is discarded and
     * {@link ExecResult#truncated()} is true.
     */
    ExecResult exec(ExecRequest request);

    /** Evaluates code in the warm interpreter inside the instance; returns its printed result. */
    default String eval(String code, int timeoutSecs) {
        throw ApiException.notImplemented("this backend has no warm interpreter");
    }

    /** Reads a file inside the instance, at most {@code maxBytes}. */
    default byte[] readFile(String path, int maxBytes) {
        throw ApiException.notImplemented("this backend cannot read guest files");
    }

    /** Writes a file inside the instance atomically. */
    default void writeFile(String path, byte[] content) {
        throw ApiException.notImplemented("this backend cannot write guest files");
    }

    /** Freezes the instance's writable filesystems (before a disk snapshot); thaw undoes it. */
    default void freezeFilesystems() {
        throw ApiException.notImplemented("this backend cannot freeze guest filesystems");
    }

    default void thawFilesystems() {
        throw ApiException.notImplemented("this backend cannot thaw guest filesystems");
    }
}
