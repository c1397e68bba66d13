package io.vivarium.api;

import java.util.List;

/**
 * Which regular files differ between two listings. A rename is one deletion plus one addition.
 *
 * @param added files present now and not before, sorted
 * @param modified files whose fingerprint changed, sorted
 * @param deleted files present before and not now, sorted
 * @param unchanged number of files with equal fingerprints
 * @param mode fingerprint mode of both listings
 * @param paths the directories compared, sorted
 * @param baselineTakenAtUnix when the earlier listing was taken
 */
public record ChangeSet(List<String> added, List<String> modified, List<String> deleted, int unchanged, String mode,
        List<String> paths, long baselineTakenAtUnix) {
}
