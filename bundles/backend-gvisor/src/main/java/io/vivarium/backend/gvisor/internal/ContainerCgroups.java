package io.vivarium.backend.gvisor.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The cgroups runsc makes for a container without a {@code cgroupsPath}: {@code /<container id>}
 * in every hierarchy. {@code runsc delete} removes them, but a start that failed after runsc made
 * them (a gofer that could not start, measured with a tiny memory limit) leaves them, empty once
 * its last process is reaped: on a loaded host a moment after runsc returned, so a cgroup still
 * busy is tried again for up to {@link #BUSY_WAIT}.
 */
final class ContainerCgroups {
    private static final Duration BUSY_WAIT = Duration.ofSeconds(5);

    private ContainerCgroups() {
    }

    /**
     * Removes {@code root/<id>} (cgroup v2) and {@code root/<controller>/<id>} (v1) where they are;
     * an empty cgroup is a plain rmdir. One that cannot be removed (still busy) does not keep the
     * others: every one is tried, and the first failure is thrown with the rest suppressed.
     */
    static void remove(Path root, String containerId) throws IOException {
        List<Path> cgroups = new ArrayList<>();
        cgroups.add(root.resolve(containerId));
        if (Files.isDirectory(root)) {
            try (DirectoryStream<Path> hierarchies = Files.newDirectoryStream(root, Files::isDirectory)) {
                for (Path hierarchy : hierarchies) {
                    cgroups.add(hierarchy.resolve(containerId));
                }
            }
        }
        IOException failure = null;
        long deadline = System.nanoTime() + BUSY_WAIT.toNanos();
        for (Path cgroup : cgroups) {
            try {
                removeWhenEmpty(cgroup, deadline);
            } catch (IOException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Removes the cgroup if it is there, trying again while the kernel says it is busy, until {@code deadline}. */
    private static void removeWhenEmpty(Path cgroup, long deadline) throws IOException {
        while (Files.isDirectory(cgroup, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.delete(cgroup);
                return;
            } catch (FileSystemException busy) {
                if (System.nanoTime() > deadline) {
                    throw busy;
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while removing " + cgroup, e);
                }
            }
        }
    }
}
