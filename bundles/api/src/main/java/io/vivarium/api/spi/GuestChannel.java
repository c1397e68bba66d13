package io.vivarium.api.spi;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.TerminalSize;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The way into a running instance. For a process sandbox this enters its namespaces; for a VM it
 * speaks the QEMU Guest Agent protocol (guest-exec, guest-file-*, guest-fsfreeze-*) over
 * virtio-serial or vsock, plus Vivarium's extensions such as eval.
 *
 * <p>Implementations must be safe to call from several threads at once: core serialises lifecycle
 * operations, not execs. Optional operations throw {@link ApiException} 501 by default, and the
 * backend's {@link SandboxBackend#capabilities()} say which are there ({@link io.vivarium.api.Capability#EVAL}).
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

    /**
     * Like {@link #exec(ExecRequest)}, as {@code user} (a name or a numeric uid inside the
     * instance), or as the instance's default user when {@code user} is null. 501 by default for
     * any other user. Since 1.2.
     */
    default ExecResult exec(ExecRequest request, String user) {
        if (user == null) {
            return exec(request);
        }
        throw ApiException.notImplemented("this backend cannot run commands as another user");
    }

    /**
     * Starts a command as {@link #exec(ExecRequest)} would, and returns at once with the running
     * command, whose output is read as it is written. 501 by default. Since 2.4.
     */
    default GuestProcess start(ExecRequest request) {
        throw ApiException.notImplemented("this backend cannot stream a command's output");
    }

    /**
     * Like {@link #start(ExecRequest)}; with {@code stdinOpen} the command's stdin stays open after
     * the request's stdin was written, for {@link GuestProcess#write}. 501 by default for an open
     * stdin. Since 2.5.
     */
    default GuestProcess start(ExecRequest request, boolean stdinOpen) {
        if (stdinOpen) {
            throw ApiException.notImplemented("this backend cannot keep a running command's stdin open");
        }
        return start(request);
    }

    /**
     * Like {@link #start(ExecRequest, boolean)} with stdin open, but the command runs on a new
     * terminal of {@code size} (its controlling terminal): what it writes to stdout and stderr comes
     * as stdout, {@link GuestProcess#write} types into it, {@link GuestProcess#resize} changes its
     * size. 501 by default. Since 2.6.
     */
    default GuestProcess startTerminal(ExecRequest request, TerminalSize size) {
        throw ApiException.notImplemented("this backend cannot run a command on a terminal");
    }

    /**
     * Lists, natively (one walk in the instance, no process per file), what the fingerprint mode
     * named {@code mode} would list with {@link FingerprintMode#guestListingCommand}: the same
     * records, exit status and errors. {@code request} is that command's exec, already filled in by
     * core; its timeout and output cap bound the listing. Empty when this channel has no native
     * listing for {@code mode}: core then runs the command. Since 1.3.
     */
    default Optional<ExecResult> listFiles(String mode, List<String> dirs, ExecRequest request) {
        return Optional.empty();
    }

    /** What this channel can carry at most; core never asks for more. Since 1.2. */
    default GuestLimits limits() {
        return GuestLimits.DEFAULT;
    }

    /**
     * Evaluates code in the warm interpreter inside the instance. By default wraps {@link #eval}:
     * its printed result, exit code 0. Since 1.2.
     */
    default EvalResult evaluate(String code, int timeoutSecs) {
        return new EvalResult(eval(code, timeoutSecs), null, 0, null);
    }

    /** Evaluates code in the warm interpreter inside the instance; returns its printed result. */
    default String eval(String code, int timeoutSecs) {
        throw ApiException.notImplemented("this backend has no warm interpreter");
    }

    /**
     * Reads a file inside the instance, at most {@code maxBytes}. The path (absolute, already
     * checked by core) resolves inside the instance as its user: a symlink must never lead to a
     * file of the host. Throws {@link ApiException} 404 if there is no such regular file, 413 if it
     * is larger than {@code maxBytes}, 403 if the instance's user may not read it.
     */
    default byte[] readFile(String path, int maxBytes) {
        throw ApiException.notImplemented("this backend cannot read guest files");
    }

    /**
     * Writes a file inside the instance as its user, atomically: a reader sees the old content or
     * the new, never a part. Errors as for {@link #readFile(String, int)}.
     */
    default void writeFile(String path, byte[] content) {
        throw ApiException.notImplemented("this backend cannot write guest files");
    }

    /**
     * Streams a file inside the instance to {@code out}, as {@link #readFile(String, int)} does. An
     * {@link ApiException} is thrown before anything is written to {@code out}. By default reads it
     * whole through {@link #readFile(String, int)}. Since 1.2.
     */
    default void readFile(String path, long maxBytes, OutputStream out) throws IOException {
        out.write(readFile(path, (int) Math.min(maxBytes, Integer.MAX_VALUE - 8)));
    }

    /**
     * Writes a file inside the instance from {@code in}, at most {@code maxBytes} (413 beyond), as
     * {@link #writeFile(String, byte[])} does. By default reads {@code in} whole and calls it. Since 1.2.
     */
    default void writeFile(String path, InputStream in, long maxBytes) throws IOException {
        byte[] content = in.readNBytes((int) Math.min(maxBytes + 1, Integer.MAX_VALUE - 8));
        if (content.length > maxBytes) {
            throw new ApiException(413, "file exceeds " + maxBytes + " bytes");
        }
        writeFile(path, content);
    }

    /** Freezes the instance's writable filesystems (before a disk snapshot); thaw undoes it. */
    default void freezeFilesystems() {
        throw ApiException.notImplemented("this backend cannot freeze guest filesystems");
    }

    /**
     * Freezes the filesystems mounted at {@code mountpoints} inside the instance (all writable ones
     * when the list is empty, as {@link #freezeFilesystems()}), thawing them by itself after
     * {@code timeout} if {@link #thawFilesystems()} has not come by then, so that a host that dies
     * mid-snapshot never leaves a guest frozen. Since 1.2.
     */
    default void freezeFilesystems(List<String> mountpoints, Duration timeout) {
        if (mountpoints.isEmpty()) {
            throw ApiException.notImplemented("this backend cannot freeze guest filesystems with a timeout");
        }
        throw ApiException.notImplemented("this backend cannot freeze named guest filesystems");
    }

    default void thawFilesystems() {
        throw ApiException.notImplemented("this backend cannot thaw guest filesystems");
    }

    /**
     * Sets the instance's clock to {@code now} (the QEMU Guest Agent's {@code guest-set-time}):
     * core calls it after every checkpoint restore, whose guest clock jumps back to the checkpoint
     * instant. 501 by default. Since 1.3.
     */
    default void setTime(Instant now) {
        throw ApiException.notImplemented("this backend cannot set the guest clock");
    }
}
