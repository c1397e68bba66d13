package io.vivarium.api;

import java.util.List;

/**
 * Answer of {@code POST /v1/sandboxes/{id}/baseline}.
 *
 * @param ok always true
 * @param files number of regular files recorded
 * @param mode fingerprint mode used ({@code sha256} or {@code stat})
 * @param paths the directories, sorted
 */
public record BaselineResult(boolean ok, int files, String mode, List<String> paths) {
}
