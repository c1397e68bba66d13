package io.vivarium.api.spi;

import java.util.List;

/**
 * A snapshot image as {@link SnapshotCopies} moves it: the holder's record of the tag, kept opaque
 * (only core reads it), and every entry of the image directory. Since 2.3.
 *
 * @param tag the tag
 * @param record the holder's record of it, as its core wrote it
 * @param entries directories before what they hold
 */
public record SnapshotManifest(String tag, String record, List<Entry> entries) {
    public static final String FILE = "file";
    public static final String DIRECTORY = "dir";
    public static final String SYMLINK = "symlink";

    public SnapshotManifest {
        entries = entries == null ? List.of() : List.copyOf(entries);
    }

    /** The bytes of its regular files. */
    public long bytes() {
        return entries.stream().filter(e -> FILE.equals(e.type())).mapToLong(Entry::size).sum();
    }

    /**
     * One entry of the image directory.
     *
     * @param path relative to the image directory, {@code /}-separated
     * @param type {@link #FILE}, {@link #DIRECTORY} or {@link #SYMLINK}
     * @param size a file's bytes (0 otherwise)
     * @param sha256 a file's SHA-256 in hex (null otherwise)
     * @param target a symbolic link's target, as written (null otherwise)
     * @param mode the permission bits
     * @param uid the owner
     * @param gid the group
     * @param mtimeMillis the modification time
     */
    public record Entry(String path, String type, long size, String sha256, String target, int mode, int uid, int gid,
            long mtimeMillis) {
    }
}
