package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LimitCgroupsTest {

    @TempDir
    Path root;

    @Test
    void usesCgroupV2WhenTheUnifiedRootHasTheMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpuset cpu io memory pids\n");

        LimitCgroups cgroups = LimitCgroups.detect(root, LimitCgroups.Controller.MEMORY);
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

        LimitCgroups cgroups = LimitCgroups.detect(root, LimitCgroups.Controller.MEMORY);
        Path cgroup = cgroups.create("sbx-1", 64);

        assertTrue(cgroups.supported());
        assertEquals(root.resolve("memory/vivarium/sbx-1"), cgroup);
        assertEquals("67108864", Files.readString(cgroup.resolve("memory.limit_in_bytes")));
        assertEquals(cgroup.resolve("cgroup.procs"), LimitCgroups.procsFile(cgroup));
    }

    @Test
    void fallsBackToV1WhenCgroupV2LacksTheMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu pids\n");
        Files.createDirectories(root.resolve("memory"));
        Files.writeString(root.resolve("memory/memory.limit_in_bytes"), "9223372036854771712\n");

        assertEquals(root.resolve("memory/vivarium/x"), LimitCgroups.detect(root, LimitCgroups.Controller.MEMORY).create("x", 1));
    }

    @Test
    void saysWhyWhenThereIsNoMemoryController() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu pids\n");

        LimitCgroups cgroups = LimitCgroups.detect(root, LimitCgroups.Controller.MEMORY);

        assertFalse(cgroups.supported());
        assertEquals("the cgroup v2 hierarchy at " + root + " has no memory controller", cgroups.unsupportedReason());
    }

    @Test
    void saysWhyWhenThereAreNoCgroupsAtAll() {
        LimitCgroups cgroups = LimitCgroups.detect(root.resolve("missing"), LimitCgroups.Controller.MEMORY);

        assertFalse(cgroups.supported());
        assertTrue(cgroups.unsupportedReason().startsWith("no cgroup v2 memory controller and no cgroup v1"));
    }

    @Test
    void pidsUseTheV1PidsHierarchyOnHybridHosts() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "");
        Files.createDirectories(root.resolve("pids"));
        Files.writeString(root.resolve("pids/cgroup.procs"), "1\n");

        Path cgroup = LimitCgroups.detect(root, LimitCgroups.Controller.PIDS).create("sbx-1", 512);

        assertEquals(root.resolve("pids/vivarium/sbx-1"), cgroup);
        assertEquals("512", Files.readString(cgroup.resolve("pids.max")));
    }

    @Test
    void pidsShareTheV2CgroupWithMemory() throws IOException {
        Files.writeString(root.resolve("cgroup.controllers"), "cpu io memory pids\n");

        Path memory = LimitCgroups.detect(root, LimitCgroups.Controller.MEMORY).create("sbx-1", 64);
        Path pids = LimitCgroups.detect(root, LimitCgroups.Controller.PIDS).create("sbx-1", 100);

        assertEquals(memory, pids);
        assertEquals("100", Files.readString(pids.resolve("pids.max")));
        assertEquals("67108864", Files.readString(memory.resolve("memory.max")));
    }

    @Test
    void saysWhyWhenThereIsNoPidsController() {
        LimitCgroups cgroups = LimitCgroups.detect(root.resolve("missing"), LimitCgroups.Controller.PIDS);

        assertFalse(cgroups.supported());
        assertTrue(cgroups.unsupportedReason().startsWith("no cgroup v2 pids controller and no cgroup v1 pids"),
                cgroups.unsupportedReason());
    }
}
