package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class ProcFsTest {

    @Test
    void readsTheChildrenOfAProcess() throws Exception {
        assertEquals(List.of(12L, 345L), ProcFs.childPids("12 345 \n"));
        assertEquals(List.of(), ProcFs.childPids(""));
        Assumptions.assumeTrue(Files.exists(Path.of("/proc/self/task/" + ProcessHandle.current().pid() + "/children")),
                "the kernel has no /proc/PID/task/TID/children");
        // a single-threaded parent: the file lists the children of the one thread named
        Process shell = new ProcessBuilder("sh", "-c", "sleep 30 & wait").start();
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            List<Long> children = List.of();
            while (children.isEmpty() && System.nanoTime() < deadline) {
                children = ProcFs.children(shell.pid()).orElseThrow();
                Thread.sleep(5);
            }
            assertEquals(1, children.size());
            assertEquals(Optional.of("sleep"), ProcFs.command(children.get(0)));
            assertTrue(ProcFs.children(Long.MAX_VALUE).isEmpty());
        } finally {
            shell.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            Bounded.waitFor(shell.destroyForcibly(), Duration.ofSeconds(30), "the shell ends once killed");
        }
    }

    @Test
    void readsTheEffectiveIds() {
        String status = "Name:\tjava\nUid:\t1000\t0\t0\t0\nGid:\t1001\t65534\t65534\t65534\n";

        assertEquals(0, ProcFs.effectiveId(status, "Uid:"));
        assertEquals(65534, ProcFs.effectiveId(status, "Gid:"));
    }

    @Test
    void seesMountPointsAndCommandLines() {
        assertTrue(ProcFs.isMountPoint(Path.of("/proc")));
        assertFalse(ProcFs.isMountPoint(Path.of("/proc/self")));
        assertTrue(ProcFs.commandLine(ProcessHandle.current().pid()).get(0).endsWith("java"));
        assertEquals(List.of(), ProcFs.commandLine(Long.MAX_VALUE));
    }
}
