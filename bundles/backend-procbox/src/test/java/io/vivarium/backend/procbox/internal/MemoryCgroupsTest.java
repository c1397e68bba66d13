package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MemoryCgroupsTest {

    @TempDir
    Path root;

    @Test
    void usesCgroupV2WhenTheUnifiedRootHasTheMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpuset cpu io memory pids\n");

        MemoryCgroups cgroups = MemoryCgroups.detect(root);
        Path cgroup = cgroups.create("sbx-1", 64);

        assertTrue(cgroups.supported());
        assertEquals(root.resolve("vivarium/sbx-1"), cgroup);
        assertEquals("67108864", Files.readString(cgroup.resolve("memory.max")));
        assertEquals("+memory", Files.readString(root.resolve("cgroup.subtree_control")));
        assertEquals("+memory", Files.readString(root.resolve("vivarium/cgroup.subtree_control")));
    }

    @Test
    void usesTheV1MemoryHierarchyOnHybridHosts() throws IOException {
        Files.createDirectories(root.resolve("unified"));
        Files.writeString(root.resolve("unified/cgroup.controllers"), "");
        Files.createDirectories(root.resolve("memory"));
        Files.writeString(root.resolve("memory/memory.limit_in_bytes"), "9223372036854771712\n");

        MemoryCgroups cgroups = MemoryCgroups.detect(root);
        Path cgroup = cgroups.create("sbx-1", 64);

        assertTrue(cgroups.supported());
        assertEquals(root.resolve("memory/vivarium/sbx-1"), cgroup);
        assertEquals("67108864", Files.readString(cgroup.resolve("memory.limit_in_bytes")));
        assertEquals(cgroup.resolve("cgroup.procs"), MemoryCgroups.procsFile(cgroup));
    }

    @Test
    void fallsBackToV1WhenCgroupV2LacksTheMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu pids\n");
        Files.createDirectories(root.resolve("memory"));
        Files.writeString(root.resolve("memory/memory.limit_in_bytes"), "9223372036854771712\n");

        assertEquals(root.resolve("memory/vivarium/x"), MemoryCgroups.detect(root).create("x", 1));
    }

    @Test
    void saysWhyWhenThereIsNoMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu pids\n");

        MemoryCgroups cgroups = MemoryCgroups.detect(root);

        assertFalse(cgroups.supported());
        assertEquals("the cgroup v2 hierarchy at " + root + " has no memory controller", cgroups.unsupportedReason());
    }

    @Test
    void saysWhyWhenThereAreNoCgroupsAtAll() {
        MemoryCgroups cgroups = MemoryCgroups.detect(root.resolve("missing"));

        assertFalse(cgroups.supported());
        assertTrue(cgroups.unsupportedReason().startsWith("no cgroup v2 memory controller and no cgroup v1"));
    }
}
