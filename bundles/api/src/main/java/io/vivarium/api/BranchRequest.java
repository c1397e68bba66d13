package io.vivarium.api;

/**
 * Body of {@code POST /v1/sandboxes/{id}/branch}. Since 1.3.
 *
 * @param tag a plain name for the new snapshot ({@link SnapshotService#TAG})
 * @param mode removed ({@code "live"}): set, it is a 410
 * @param live removed: true is a 410
 * @param diff removed: true is a 410
 * @param measureDiff removed: true is a 410
 */
public record BranchRequest(String tag, String mode, Boolean live, Boolean diff, Boolean measureDiff) {
}
