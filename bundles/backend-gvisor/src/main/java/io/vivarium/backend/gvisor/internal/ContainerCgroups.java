package io.vivarium.backend.gvisor.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The cgroups runsc makes for a container without a {@code cgroupsPath}: {@code /<container id>}
 * in every hierarchy. {@code runsc delete} removes them, but a start that failed after runsc made
 * them (a gofer that could not start, measured with a tiny memory limit) leaves them, empty.
 */
final class ContainerCgroups {

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
        for (Path cgroup : cgroups) {
            try {
                if (Files.isDirectory(cgroup, LinkOption.NOFOLLOW_LINKS)) {
                    Files.delete(cgroup);
                }
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
}
