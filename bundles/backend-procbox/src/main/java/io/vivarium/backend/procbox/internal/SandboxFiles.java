package io.vivarium.backend.procbox.internal;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;

/**
 * Reads and writes files inside a sandbox by running {@code sh} there as the sandbox user, so a
 * path resolves in the sandbox's own mount namespace with its rights: a symlink in the workspace
 * can only ever lead to what the sandbox itself sees. The path is a positional parameter of
 * constant scripts, never part of one. (The guest agent will take this over.)
 */
final class SandboxFiles {

    /** Exit statuses of the scripts, each mapped to the caller's status. */
    private static final int MISSING = 100;
    private static final int NOT_A_FILE = 101;
    private static final int DENIED = 102;
    private static final int TOO_LARGE = 103;

    /** $1 the path, $2 the largest size: checks, then streams the file to stdout. */
    static final String READ_SCRIPT = "f=\"$1\"; [ -e \"$f\" ] || exit 100; [ -f \"$f\" ] || exit 101; "
            + "[ -r \"$f\" ] || exit 102; s=$(stat -L -c %s -- \"$f\") || exit 102; [ \"$s\" -le \"$2\" ] || exit 103; "
            + "exec cat -- \"$f\"";
    /**
     * $1 the path: stdin goes to a temporary file beside it, which then replaces it with a rename,
     * so a reader sees the old content or the new. The mode of a replaced file is kept.
     */
    static final String WRITE_SCRIPT = "f=\"$1\"; d=$(dirname -- \"$f\"); [ -d \"$d\" ] || exit 100; "
            + "[ ! -d \"$f\" ] || exit 101; t=$(mktemp -- \"$d/.vivarium-write.XXXXXX\" 2>/dev/null) || exit 102; "
            + "trap 'rm -f -- \"$t\"' EXIT; cat > \"$t\" || exit 1; "
            + "if [ -f \"$f\" ]; then chmod --reference=\"$f\" -- \"$t\"; else chmod 644 -- \"$t\"; fi; "
            + "mv -f -- \"$t\" \"$f\" || exit 102";

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "LC_ALL", "C");
    private static final Duration TIMEOUT = Duration.ofMinutes(2);
    private static final int ERROR_OUTPUT_BYTES = 4096;
    /**
     * How long to wait for the rest of a file once {@code cat} has exited. Nothing else holds the
     * pipe, so the end comes as soon as the reader thread is scheduled; this only bounds it.
     */
    private static final Duration OUTPUT_GRACE = Duration.ofSeconds(30);

    private final String sandboxId;
    private final ProcboxRecord sandbox;
    private final SandboxCommands commands;

    SandboxFiles(String sandboxId, ProcboxRecord sandbox, SandboxCommands commands) {
        this.sandboxId = sandboxId;
        this.sandbox = sandbox;
        this.commands = commands;
    }

    byte[] read(String path, int maxBytes) {
        ProcessRunner.RawResult r = run(List.of(SandboxCommands.SH, "-c", READ_SCRIPT, "sh", path,
                Integer.toString(maxBytes)), new byte[0], maxBytes);
        check(r, path, maxBytes);
        if (r.truncated()) {
            throw tooLarge(path, maxBytes); // grew while it was read
        }
        return r.stdout();
    }

    void write(String path, byte[] content) {
        check(run(List.of(SandboxCommands.SH, "-c", WRITE_SCRIPT, "sh", path), content, ERROR_OUTPUT_BYTES), path,
                content.length);
    }

    private ProcessRunner.RawResult run(List<String> script, byte[] stdin, int maxOutputBytes) {
        if (!sandbox.init().isRunning()) {
            throw new ApiException(503, "sandbox " + sandboxId + " is not running");
        }
        return ProcessRunner.runRaw(commands.exec(sandbox, SandboxCommands.WORKSPACE, script), ENV, stdin, TIMEOUT,
                maxOutputBytes, OUTPUT_GRACE);
    }

    private void check(ProcessRunner.RawResult r, String path, long size) {
        if (r.timedOut()) {
            throw new ApiException(504, "moving " + path + " in sandbox " + sandboxId + " took longer than "
                    + TIMEOUT.toSeconds() + " s");
        }
        switch (r.exitCode()) {
            case 0 -> {
                if (!r.complete()) {
                    throw ApiException.unavailable("reading " + path + " in sandbox " + sandboxId
                            + " did not finish; retry", 1);
                }
            }
            case MISSING -> throw ApiException.notFound("no file " + path + " in sandbox " + sandboxId
                    + " (or no directory to hold it)");
            case NOT_A_FILE -> throw ApiException.badRequest(path + " is not a regular file in sandbox " + sandboxId);
            case DENIED -> throw ApiException.forbidden("the sandbox user may not access " + path);
            case TOO_LARGE -> throw tooLarge(path, size);
            default -> throw ApiException.internal("file operation on " + path + " in sandbox " + sandboxId
                    + " failed (exit " + r.exitCode() + "): " + new String(r.stderr(), UTF_8).strip(), null);
        }
    }

    private static ApiException tooLarge(String path, long maxBytes) {
        return new ApiException(413, path + " is larger than " + maxBytes + " bytes, the most one request moves");
    }
}
