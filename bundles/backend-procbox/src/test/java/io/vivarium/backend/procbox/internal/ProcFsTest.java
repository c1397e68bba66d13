package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

class ProcFsTest {

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
    void seesMountPointsAndCommandLines() {
        assertTrue(ProcFs.isMountPoint(Path.of("/proc")));
        assertFalse(ProcFs.isMountPoint(Path.of("/proc/self")));
        assertTrue(ProcFs.commandLine(ProcessHandle.current().pid()).get(0).endsWith("java"));
        assertEquals(List.of(), ProcFs.commandLine(Long.MAX_VALUE));
    }
}
