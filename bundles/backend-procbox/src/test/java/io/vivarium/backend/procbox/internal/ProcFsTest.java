package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

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
    void unescapesMountPoints() {
        String line = "44 27 0:39 / /var/lib/a\\040b\\134c/merged rw,relatime - overlay overlay rw,lowerdir=/x";

        assertEquals("/var/lib/a b\\c/merged", ProcFs.mountPoint(line));
    }

    @Test
    void findsTheMountsAtAPathWhoseNameTheKernelEscapes() {
        String mine = "44 27 0:39 / /var/lib/a\\040b\\134c/merged rw,nosymfollow - overlay overlay rw";
        String longer = "45 27 0:40 / /var/lib/a\\040b\\134c/merged/deeper rw - tmpfs tmpfs rw";
        String other = "46 27 0:41 / /var/lib/a\\040b rw - tmpfs tmpfs rw";
        String over = "47 44 0:42 / /var/lib/a\\040b\\134c/merged ro - tmpfs tmpfs rw";

        assertEquals("/a\\040b\\011c\\012d\\134e", ProcFs.escapeMountPath("/a b\tc\nd\\e"));
        assertEquals(List.of(mine, over), ProcFs.mountsAt(Stream.of(other, mine, longer, over),
                Path.of("/var/lib/a b\\c/merged")).toList());
        assertEquals(List.of(), ProcFs.mountsAt(Stream.of(other, longer), Path.of("/var/lib/a b\\c/merged")).toList());
    }

    @Test
    void seesMountPointsAndCommandLines() {
        assertTrue(ProcFs.isMountPoint(Path.of("/proc")));
        assertFalse(ProcFs.isMountPoint(Path.of("/proc/self")));
        assertTrue(ProcFs.commandLine(ProcessHandle.current().pid()).get(0).endsWith("java"));
        assertEquals(List.of(), ProcFs.commandLine(Long.MAX_VALUE));
    }
}
