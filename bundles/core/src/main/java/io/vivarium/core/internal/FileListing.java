package io.vivarium.core.internal;

import java.util.List;
import java.util.Map;
import java.util.SortedMap;

/**
 * The regular files under some directories with their fingerprints, keyed by path as the sandbox
 * sees it. {@code stamps} holds, for host listings, what must be unchanged for a fingerprint to be
 * reused without reading the file again.
 *
 * @param mode fingerprint mode name
 * @param paths the listed directories, sorted
 * @param takenAtUnix when the listing started
 * @param files path to fingerprint, sorted by path
 * @param stamps path to stamp (size, mtime, ctime, inode); absent for guest listings
 */
record FileListing(String mode, List<String> paths, long takenAtUnix, SortedMap<String, String> files,
        Map<String, String> stamps) {

    /** The part of this listing under any of {@code dirs}. */
    FileListing within(List<String> dirs) {
        var sub = new java.util.TreeMap<String, String>();
        files.forEach((path, fp) -> {
            if (dirs.stream().anyMatch(d -> SandboxPaths.within(path, d))) {
                sub.put(path, fp);
            }
        });
        return new FileListing(mode, dirs, takenAtUnix, sub, stamps);
    }
}
