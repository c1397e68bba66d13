package io.vivarium.api;

/**
 * Answer of a dry-run: the exec result, what the command changed, and how it was undone.
 *
 * @param discarded true only if the command's effects were actually discarded
 * @param revertedVia the mechanism that discarded them, e.g. {@code overlay} or {@code workspace-copy}
 */
public record DryRunResult(String stdout, String stderr, int exitCode, boolean timedOut, boolean truncated,
        long durationMs, ChangeSet changes, boolean discarded, String revertedVia) {
}
