package io.vivarium.kit.guest;

import io.vivarium.api.ExecResult;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Outcome of {@link GuestAgentClient#exec}.
 *
 * @param stdout at most the spec's cap
 * @param stderr at most the spec's cap
 * @param exitCode the exit status, or null if the command was killed by a signal
 * @param signal the signal that killed it, or null
 * @param timedOut the spec's timeout expired and the command was killed
 * @param stdoutTruncated standard output went past the cap
 * @param stderrTruncated standard error went past the cap
 * @param duration wall-clock time of the command (as the agent measured it, when it does)
 */
public record GuestExecResult(byte[] stdout, byte[] stderr, Integer exitCode, Integer signal, boolean timedOut,
        boolean stdoutTruncated, boolean stderrTruncated, Duration duration) {

    /** The API's shape: UTF-8 text (lossy), 128+N for signal N. */
    public ExecResult toExecResult() {
        int code = exitCode != null ? exitCode : signal != null ? 128 + signal : -1;
        return new ExecResult(new String(stdout, StandardCharsets.UTF_8), new String(stderr, StandardCharsets.UTF_8),
                code, timedOut, stdoutTruncated || stderrTruncated, duration.toMillis());
    }
}
