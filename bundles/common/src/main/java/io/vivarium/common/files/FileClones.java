package io.vivarium.common.files;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.vivarium.common.exec.HostCommand;

/**
 * Copy-on-write clones of files and trees where the target's filesystem has them (XFS with reflink,
 * btrfs), an honest full copy elsewhere, through {@code cp -a}: {@code --reflink=always} (which fails
 * where it cannot clone, so the mode reported is the mode used) or {@code --sparse=always}. Whether a
 * filesystem clones is probed once per filesystem (keyed by its device number) with a small file.
 * A single file cloned within one filesystem that clones is copied in this process instead
 * ({@link Files#copy}, which is {@code copy_file_range(2)} on Linux, and the kernel clones such a
 * copy: {@code vfs_copy_file_range} remaps the blocks when source and target share a filesystem
 * whose files clone, as {@code FICLONE} does): no {@code cp} to start, which a fork of many
 * children paid once per child. For such a file the mode reported is what the filesystem should
 * do, not checked: where the kernel cannot remap one file (XFS realtime or DAX files, swap files)
 * it copies it whole and the answer still says {@link #REFLINK}.
 * The one copy of this logic, for the storage strategies that clone (storage-reflink, and
 * storage-diffchain for the base of a chain).
 */
public final class FileClones {

    /** A clone: the target shares the source's blocks and nothing was written. */
    public static final String REFLINK = "reflink";
    /** A full (sparse) copy. */
    public static final String COPY = "copy";

    private static final System.Logger LOG = System.getLogger(FileClones.class.getName());
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

    private final Map<Object, Boolean> byDevice = new ConcurrentHashMap<>();

    /** Whether the filesystem of {@code dir} (or of its nearest existing ancestor) clones files. */
    public boolean clones(Path dir) {
        Path existing = dir.toAbsolutePath();
        while (existing != null && !Files.isDirectory(existing)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return false;
        }
        Object device;
        try {
            device = Files.getAttribute(existing, "unix:dev");
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
        Path in = existing;
        return byDevice.computeIfAbsent(device, d -> probe(in));
    }

    /**
     * Clones {@code source} (a file or a tree) to {@code target} where the filesystem can, else (or
     * when the clone fails, e.g. across filesystems) copies it; returns {@link #REFLINK} or
     * {@link #COPY}. {@code target} must not exist; a failed clone's leftovers are removed before the
     * copy.
     *
     * @param timeLeft the watchdog time for each {@code cp}, asked before each run
     */
    public String cloneOrCopy(Path source, Path target, Supplier<Duration> timeLeft) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        if (clones(dir)) {
            try {
                if (Files.isRegularFile(source, LinkOption.NOFOLLOW_LINKS) && sameFilesystem(source, dir)) {
                    Files.copy(source, target, StandardCopyOption.COPY_ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
                } else {
                    cp(source, target, true, timeLeft.get());
                }
                return REFLINK;
            } catch (IOException e) {
                LOG.log(Level.INFO, "no clone of " + source + " (" + e.getMessage() + "); copying it");
                deleteTree(target);
            }
        }
        cp(source, target, false, timeLeft.get());
        return COPY;
    }

    private static boolean sameFilesystem(Path a, Path b) throws IOException {
        return Files.getAttribute(a, "unix:dev").equals(Files.getAttribute(b, "unix:dev"));
    }

    /** {@code cp -a} of a file or tree: {@code --reflink=always} (fails where it cannot clone) or a sparse copy. */
    public static void cp(Path source, Path target, boolean reflink, Duration timeout) throws IOException {
        HostCommand.run(List.of("cp", "-a", reflink ? "--reflink=always" : "--sparse=always", "--", source.toString(),
                target.toString()), timeout);
    }

    /** Deletes a file, or a folder and everything below it; nothing if it does not exist. */
    public static void deleteTree(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)) {
            try (var children = Files.list(path)) {
                for (Path child : children.toList()) {
                    deleteTree(child);
                }
            }
        }
        Files.delete(path);
    }

    private static boolean probe(Path dir) {
        String name = ".reflink-probe-" + UUID.randomUUID();
        Path probe = dir.resolve(name);
        Path clone = dir.resolve(name + ".clone");
        try {
            Files.write(probe, new byte[4096]);
            cp(probe, clone, true, PROBE_TIMEOUT);
            LOG.log(Level.INFO, "the filesystem of " + dir + " clones files (reflink)");
            return true;
        } catch (IOException e) {
            LOG.log(Level.INFO, "the filesystem of " + dir + " does not clone files, so copies are full: " + e.getMessage());
            return false;
        } finally {
            try {
                Files.deleteIfExists(clone);
                Files.deleteIfExists(probe);
            } catch (IOException e) {
                LOG.log(Level.WARNING, "cannot delete the reflink probe " + probe + ": " + e.getMessage());
            }
        }
    }
}
