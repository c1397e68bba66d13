package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.ResourceUsage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxUsageTest {

    @Test
    void parsesResidentMemoryAndCpuTicks() {
        assertEquals(2048L * 1024, SandboxUsage.residentBytes("Name:\tsleep\nVmPeak:\t  9000 kB\nVmRSS:\t    2048 kB\n"));
        assertEquals(0, SandboxUsage.residentBytes("Name:\tkthreadd\n"));
        String stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 12345 1000 10";
        assertEquals(7 + 3 + 2 + 1, SandboxUsage.cpuTicks(stat));
    }

    @Test
    void measuresTheProcessesOfAPidNamespaceAndTheWorkspace(@TempDir Path work) throws Exception {
        Files.write(work.resolve("a"), new byte[1000]);
        Files.createDirectories(work.resolve("d"));
        Files.write(work.resolve("d").resolve("b"), new byte[24]);
        Files.createSymbolicLink(work.resolve("link"), Path.of("/etc/hostname"));
        ResourceUsage u = SandboxUsage.measure(ProcessHandle.current().pid(), work);
        assertEquals(1024L, u.diskBytes(), "regular files only, symlinks not followed");
        assertTrue(u.residentMemoryBytes() >= Runtime.getRuntime().totalMemory() / 4, u.toString());
        assertTrue(u.cpuSeconds() > 0, u.toString());
    }
}
