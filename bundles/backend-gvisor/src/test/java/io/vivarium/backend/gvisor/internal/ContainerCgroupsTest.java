package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ContainerCgroupsTest {

    @TempDir
    Path root;

    @Test
    void removesTheContainersCgroupInEveryHierarchyAndNoOther() throws IOException {
        Files.createDirectories(root.resolve("memory/vivarium-a-1"));
        Files.createDirectories(root.resolve("pids/vivarium-a-1"));
        Files.createDirectories(root.resolve("pids/vivarium-b-2"));
        Files.createDirectories(root.resolve("vivarium-a-1"));

        ContainerCgroups.remove(root, "vivarium-a-1");

        assertFalse(Files.exists(root.resolve("memory/vivarium-a-1")));
        assertFalse(Files.exists(root.resolve("pids/vivarium-a-1")));
        assertFalse(Files.exists(root.resolve("vivarium-a-1")));
        assertTrue(Files.exists(root.resolve("pids/vivarium-b-2")), "another container's cgroup stays");
        ContainerCgroups.remove(root, "vivarium-a-1");
    }

    @Test
    void oneCgroupThatCannotGoDoesNotKeepTheOthers() throws IOException {
        // the v2 cgroup is tried first: busy, it must not keep the v1 ones
        Files.createDirectories(root.resolve("vivarium-a-1/busy"));
        Files.createDirectories(root.resolve("memory/vivarium-a-1"));
        Files.createDirectories(root.resolve("pids/vivarium-a-1"));

        assertThrows(DirectoryNotEmptyException.class, () -> ContainerCgroups.remove(root, "vivarium-a-1"));

        assertFalse(Files.exists(root.resolve("memory/vivarium-a-1")));
        assertFalse(Files.exists(root.resolve("pids/vivarium-a-1")));
    }
}
