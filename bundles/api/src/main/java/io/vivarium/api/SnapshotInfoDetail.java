package io.vivarium.api;

import java.util.List;

/**
 * What {@code GET /v1/snapshots/{tag}/info} returns: the registry's {@link SnapshotInfo} plus the
 * chain and what the snapshot holds on disk. Since 1.3.
 *
 * @param logicalBytes the apparent size of its files
 * @param physicalBytes what they take on disk ({@code st_blocks × 512}): small for a reflinked copy
 *        only when the filesystem reports shared extents per file, so read it as an upper bound
 * @param memoryLogicalBytes the apparent size of its memory image; 0 when it captures files only
 * @param memoryPhysicalBytes what the memory image takes on disk; 0 when it captures files only
 * @param parentTag the snapshot it depends on, or null for a base
 * @param parentContentHash the parent's content hash when this one was chained on it, or null
 * @param chainDepth links between it and its chain root (0 for a base)
 * @param ancestors root → direct parent; empty for a base
 * @param dependents tags whose parent is this one: what a delete would orphan
 * @param template as {@link SnapshotInfo#template()}; since 2.11
 */
public record SnapshotInfoDetail(String tag, String dir, long createdAtUnix, String backend, String branchedFrom,
        Long pauseMs, String status, boolean bootable, String warning, String captures, long logicalBytes,
        long physicalBytes, long memoryLogicalBytes, long memoryPhysicalBytes, String parentTag,
        String parentContentHash, int chainDepth, List<String> ancestors, List<String> dependents, String template) {

    /** The record before {@code template}. */
    public SnapshotInfoDetail(String tag, String dir, long createdAtUnix, String backend, String branchedFrom,
            Long pauseMs, String status, boolean bootable, String warning, String captures, long logicalBytes,
            long physicalBytes, long memoryLogicalBytes, long memoryPhysicalBytes, String parentTag,
            String parentContentHash, int chainDepth, List<String> ancestors, List<String> dependents) {
        this(tag, dir, createdAtUnix, backend, branchedFrom, pauseMs, status, bootable, warning, captures, logicalBytes,
                physicalBytes, memoryLogicalBytes, memoryPhysicalBytes, parentTag, parentContentHash, chainDepth, ancestors,
                dependents, null);
    }
}
