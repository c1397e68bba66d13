package io.vivarium.api;

/**
 * The fork form of {@code POST /v1/sandboxes}: {@code n} children of a registered snapshot. Since 1.3.
 *
 * @param snapshotTag the tag to fork
 * @param n how many children, 1 to {@link SnapshotService#MAX_FORK}
 * @param perChildNetns accepted and ignored: every sandbox has its own network namespace
 * @param memoryLimitMib memory limit of each child, or null
 * @param liveFork removed: true is a 410
 * @param hugepages removed: true is a 410
 */
public record ForkRequest(String snapshotTag, Integer n, Boolean perChildNetns, Integer memoryLimitMib,
        Boolean liveFork, Boolean hugepages) {
}
