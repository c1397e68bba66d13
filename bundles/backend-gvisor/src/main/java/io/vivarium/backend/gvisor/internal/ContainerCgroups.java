package io.vivarium.backend.gvisor.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * The cgroups runsc makes for a container without a {@code cgroupsPath}: {@code /<container id>}
 * in every hierarchy. {@code runsc delete} removes them, but a start that failed after runsc made
 * them (a gofer that could not start, measured with a tiny memory limit) leaves them, empty.
 */
final class ContainerCgroups {

    private ContainerCgroups() {
    }

    /** Removes {@code root/<id>} (cgroup v2) and {@code root/<controller>/<id>} (v1) where they are; an empty cgroup is a plain rmdir. */
    static void remove(Path root, String containerId) throws IOException {
        removeIfThere(root.resolve(containerId));
        if (!Files.isDirectory(root)) {
            return;
        }
        try (DirectoryStream<Path> hierarchies = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path hierarchy : hierarchies) {
                removeIfThere(hierarchy.resolve(containerId));
            }
        }
    }

    private static void removeIfThere(Path cgroup) throws IOException {
        if (Files.isDirectory(cgroup, LinkOption.NOFOLLOW_LINKS)) {
            Files.delete(cgroup);
        }
    }
}
