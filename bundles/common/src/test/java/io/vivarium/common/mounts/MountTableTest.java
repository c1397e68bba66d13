package io.vivarium.common.mounts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

class MountTableTest {

    @Test
    void parsesALineWhoseNamesTheKernelEscaped() {
        String line = "44 27 7:3 /sub\\040dir /var/lib/a\\040b\\134c/merged rw,relatime - ext4 /dev/loop3 rw";

        assertEquals(new MountTable.Mount("7:3", "/sub dir", "/var/lib/a b\\c/merged", "rw,relatime",
                "/dev/loop3"),
                MountTable.parse(line));
        assertEquals(new MountTable.Mount("98:0", "/mnt1", "/mnt2", "rw,noatime", "/dev/root"),
                MountTable.parse("36 35 98:0 /mnt1 /mnt2 rw,noatime shared:1 master:2 - ext3 /dev/root rw,errors=continue"));
    }

    @Test
    void findsTheMountsAtAPathWhoseNameTheKernelEscapes() {
        String mine = "44 27 0:39 / /var/lib/a\\040b\\134c/merged rw,nosymfollow - overlay overlay rw";
        String longer = "45 27 0:40 / /var/lib/a\\040b\\134c/merged/deeper rw - tmpfs tmpfs rw";
        String other = "46 27 0:41 / /var/lib/a\\040b rw - tmpfs tmpfs rw";
        String over = "47 44 0:42 / /var/lib/a\\040b\\134c/merged ro - tmpfs tmpfs rw";

        assertEquals("/a\\040b\\011c\\012d\\134e", MountTable.escape("/a b\tc\nd\\e"));
        assertEquals(List.of(mine, over), MountTable.mountsAt(Stream.of(other, mine, longer, over),
                Path.of("/var/lib/a b\\c/merged")).toList());
        assertEquals(List.of(), MountTable.mountsAt(Stream.of(other, longer), Path.of("/var/lib/a b\\c/merged")).toList());
    }

    @Test
    void seesTheMountPointsOfThisProcess() {
        assertTrue(MountTable.isMountPoint(Path.of("/proc")));
        assertFalse(MountTable.isMountPoint(Path.of("/proc/self")));
        assertEquals("/", MountTable.at(Path.of("/proc")).orElseThrow().root());
        assertEquals("proc", MountTable.at(ProcessHandle.current().pid(), Path.of("/proc")).orElseThrow().source());
        assertEquals(java.util.Optional.empty(), MountTable.at(Long.MAX_VALUE, Path.of("/proc")));
    }
}
