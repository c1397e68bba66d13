package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.mounts.MountTable;

/**
 * Volumes on this host (docs/volumes.md): each an ext4 file system in a sparse file, loop-mounted
 * once while sandboxes use it, and bound into each sandbox from a directory of its own that the
 * sandbox's user cannot swap: the directory of the volume to bind is resolved without following
 * links, and the bind is checked in the mount table to be that directory of that file system.
 * Host tools only, never a shell. The directories that hold the mounts are the daemon's alone (0700),
 * so no other user of the host reaches a volume through them.
 */
final class HostVolumes {
    private static final Duration TOOL_TIME = Duration.ofSeconds(60);
    /** Who makes a missing {@code sub_path}: nobody, so a link swapped in meanwhile leads nowhere it may write. */
    private static final String NOBODY = "65534";
    private static final java.util.Set<java.nio.file.attribute.PosixFilePermission> DAEMON_ONLY =
            PosixFilePermissions.fromString("rwx------");

    /** Makes {@code dir} (and its parents) and closes it to everyone but the daemon. */
    static Path privateDir(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, DAEMON_ONLY);
        return dir;
    }

    /**
     * Makes an empty volume of {@code sizeMib} at {@code image}, through a temporary file beside it.
     * Its blocks are allocated at once (not a sparse file), so the host never promises more than it
     * has: a volume that does not fit is refused here (507), not ENOSPC later for someone else.
     */
    void create(Path image, String label, int sizeMib) throws IOException {
        Path staged = image.resolveSibling("." + image.getFileName() + ".tmp");
        Files.deleteIfExists(staged);
        try {
            try {
                HostCommand.run(List.of("fallocate", "-l", sizeMib + "MiB", staged.toString()), TOOL_TIME);
            } catch (IOException e) {
                if (e.getMessage().contains("No space left")) {
                    throw new ApiException(507, "the host has no room for a volume of " + sizeMib + " MiB ("
                            + Files.getFileStore(image.getParent()).getUsableSpace() / (1 << 20) + " MiB free where "
                            + "volumes are kept); ask for less, or delete volumes you no longer need");
                }
                throw e;
            }
            // no blocks kept for root (-m 0): the size asked for is what the sandbox can write
            HostCommand.run(List.of("mkfs.ext4", "-q", "-F", "-m", "0", "-L", label, staged.toString()), TOOL_TIME);
            // every user of every sandbox writes its root; the sticky bit keeps their files apart
            HostCommand.run(List.of("debugfs", "-w", "-R", "sif / mode 041777", staged.toString()), TOOL_TIME);
            Files.move(staged, image, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(staged);
        }
    }

    /** Mounts the volume at {@code at} unless it is mounted there already (a daemon restart). */
    MountTable.Mount mount(Path image, Path at) throws IOException {
        privateDir(at.getParent());
        Files.createDirectories(at);
        if (!MountTable.isMountPoint(at)) {
            HostCommand.run(List.of("mount", "-t", "ext4", "-o", "loop,nosuid,nodev", image.toString(), at.toString()),
                    TOOL_TIME);
        }
        return MountTable.at(at).orElseThrow(() -> new IOException("nothing is mounted at " + at + " after its mount"));
    }

    /**
     * Binds the directory {@code subPath} (null for the root) of the volume mounted at {@code volume}
     * at {@code at}, read-only where asked, making the directory when missing.
     *
     * @throws ApiException 409 if a component of {@code subPath} is not a directory, or the
     *         directory was swapped while it was bound
     */
    void bind(MountTable.Mount volume, String subPath, Path at, boolean readOnly, String name) throws IOException {
        Path source = directory(Path.of(volume.mountPoint()), subPath, name);
        privateDir(at.getParent().getParent());
        privateDir(at.getParent());
        Files.createDirectories(at);
        HostCommand.run(List.of("mount", "--bind", source.toString(), at.toString()), TOOL_TIME);
        try {
            if (readOnly) {
                HostCommand.run(List.of("mount", "-o", "remount,bind,ro,nosuid,nodev", at.toString()), TOOL_TIME);
            }
            MountTable.Mount bound = MountTable.at(at).orElseThrow(() -> new IOException("nothing is bound at " + at));
            String root = subPath == null ? "/" : "/" + subPath;
            if (!bound.device().equals(volume.device()) || !bound.root().equals(root)) {
                throw new ApiException(409, "sub_path " + subPath + " of volume " + name
                        + " was replaced while it was being mounted; retry");
            }
        } catch (IOException | RuntimeException e) {
            unmount(at);
            throw e;
        }
    }

    /**
     * {@code subPath} below {@code root}: its parts that exist must be directories, not links (a
     * sandbox may have left {@code escape -> /etc} in the volume), and what is missing is made by
     * nobody ({@code mkdir -m 0777} under {@code setpriv}), never by root: a link swapped in between
     * this look and the mkdir then leads only where nobody may write. The bind that follows is
     * checked to be this directory of the volume ({@link #bind}).
     */
    private static Path directory(Path root, String subPath, String name) throws IOException {
        if (subPath == null) {
            return root;
        }
        Path dir = root;
        boolean missing = false;
        for (Path part : Path.of(subPath)) {
            dir = dir.resolve(part);
            if (Files.isSymbolicLink(dir) || Files.exists(dir, LinkOption.NOFOLLOW_LINKS)
                    && !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                throw new ApiException(409, "sub_path " + subPath + " of volume " + name + ": " + root.relativize(dir)
                        + " is not a directory (a link or a file); choose another sub_path");
            }
            missing |= !Files.exists(dir, LinkOption.NOFOLLOW_LINKS);
        }
        if (missing) {
            try {
                // from the volume's root, by a relative path: nobody need not pass the daemon's 0700 directories
                HostCommand.run(List.of("setpriv", "--reuid", NOBODY, "--regid", NOBODY, "--clear-groups",
                        "--no-new-privs", "--", "mkdir", "-p", "-m", "0777", "--", subPath), TOOL_TIME, root);
            } catch (IOException e) {
                throw new ApiException(409, "sub_path " + subPath + " of volume " + name + " cannot be made (a directory on "
                        + "the way may not be writable by every user): make it from a sandbox that mounts the volume, "
                        + "then try again");
            }
        }
        return dir;
    }

    /** Unmounts {@code at} if anything is mounted there; false if it is still busy. */
    boolean unmount(Path at) {
        if (!MountTable.isMountPoint(at)) {
            return true;
        }
        try {
            HostCommand.run(List.of("umount", at.toString()), TOOL_TIME);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Unmounts a bind, or detaches it lazily when busy: it is the volume's own file system either way. */
    void unbind(Path at) throws IOException {
        if (!unmount(at)) {
            HostCommand.run(List.of("umount", "--lazy", at.toString()), TOOL_TIME);
        }
    }

    /** The directories below {@code dir} (none if it does not exist). */
    static List<Path> children(Path dir) throws IOException {
        List<Path> found = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (var list = Files.list(dir)) {
                list.forEach(found::add);
            }
        }
        return found;
    }
}
