package io.vivarium.api;

/**
 * Outcome of an exec.
 *
 * @param stdout captured standard output (UTF-8, lossy), at most the cap
 * @param stderr captured standard error, at most the cap
 * @param exitCode exit status; 128+N when killed by signal N; -1 if it never started
 * @param timedOut true if the timeout expired and the process group was killed
 * @param truncated true if either stream exceeded the cap
 * @param durationMs wall-clock time of the command
 */
public record ExecResult(String stdout, String stderr, int exitCode, boolean timedOut, boolean truncated,
        long durationMs) {
}
