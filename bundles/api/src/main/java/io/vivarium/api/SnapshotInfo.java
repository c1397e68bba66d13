package io.vivarium.api;

/**
 * A registered snapshot (an image children can be forked from), as {@code GET /v1/snapshots}
 * lists it. Since 1.3.
 *
 * @param tag the snapshot's plain name, unique per tenant
 * @param dir where its files are on the host
 * @param createdAtUnix when it was registered, seconds since the epoch
 * @param backend the backend whose sandboxes it was taken from and that forks it
 * @param branchedFrom the id of the sandbox it was branched from; null when built by {@code POST /v1/snapshots}
 *        or compacted
 * @param pauseMs the measured pause of that sandbox while it was captured; null when not branched
 * @param status {@code writing} while it is written, {@code ready} when children can be forked,
 *        {@code failed} when writing it did not finish ({@code warning} says why)
 * @param bootable whether its artifacts are all there, so a fork will not refuse it before it starts
 * @param warning what is missing or wrong when it is not bootable, else null
 * @param captures what it holds: {@code files} (a process sandbox: its workspace, not the memory of
 *        its processes) or {@code files+memory} (a VM)
 * @param parentTag the tag it was compacted from or chained on, or null
 * @param template the operator's template of the sandbox it was branched from, whose sandboxes its
 *        children are, or null; since 2.11
 */
public record SnapshotInfo(String tag, String dir, long createdAtUnix, String backend, String branchedFrom,
        Long pauseMs, String status, boolean bootable, String warning, String captures, String parentTag, String template) {

    public static final String WRITING = "writing";
    public static final String READY = "ready";
    public static final String FAILED = "failed";

    /** The record before {@code template}. */
    public SnapshotInfo(String tag, String dir, long createdAtUnix, String backend, String branchedFrom, Long pauseMs,
            String status, boolean bootable, String warning, String captures, String parentTag) {
        this(tag, dir, createdAtUnix, backend, branchedFrom, pauseMs, status, bootable, warning, captures, parentTag, null);
    }
}
