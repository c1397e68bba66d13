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
 * @param nodeId the fleet node to fork on, on a master: 409 if it cannot run the tag's image;
 *        a daemon that drives no nodes refuses it; since 2.1
 */
public record ForkRequest(String snapshotTag, Integer n, Boolean perChildNetns, Integer memoryLimitMib,
        Boolean liveFork, Boolean hugepages, String nodeId) {

    /** The request of API 2.0 (no node). */
    public ForkRequest(String snapshotTag, Integer n, Boolean perChildNetns, Integer memoryLimitMib, Boolean liveFork,
            Boolean hugepages) {
        this(snapshotTag, n, perChildNetns, memoryLimitMib, liveFork, hugepages, null);
    }

    /** The same request without a node: what a master sends the node it chose. */
    public ForkRequest onAnyNode() {
        return new ForkRequest(snapshotTag, n, perChildNetns, memoryLimitMib, liveFork, hugepages, null);
    }
}
