package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.RootImage;
import io.vivarium.common.exec.HostCommand;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RootDisksTest {

    private static final Duration TOOL_TIME = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private RootImage image(Path rootfs) {
        return new RootImage("sha256:" + "a".repeat(64), rootfs, Map.of(), "/", null, 0, 0, List.of(), List.of());
    }

    @Test
    void theDiskHoldsTheImagesFilesAndTheMountpointsItLackedAndIsMadeOnce() throws Exception {
        for (String tool : List.of("/usr/sbin/mkfs.ext4", "/usr/sbin/debugfs")) {
            Assumptions.assumeTrue(Files.isExecutable(Path.of(tool)), "needs " + tool + " (apt-get install e2fsprogs)");
        }
        Path rootfs = Files.createDirectories(dir.resolve("sha256-a/rootfs"));
        Files.createDirectories(rootfs.resolve("etc"));
        Files.writeString(rootfs.resolve("etc/hello"), "from the image\n");
        Files.createDirectories(rootfs.resolve("tmp"));
        Files.createSymbolicLink(rootfs.resolve("hello"), Path.of("etc/hello"));

        Path disk = new RootDisks().diskOf(image(rootfs));
        assertEquals(dir.resolve("sha256-a/derived/" + RootDisks.FILE), disk, "beside the root, so it goes with the image");
        String listing = HostCommand.run(List.of("debugfs", "-R", "ls -p /", disk.toString()), TOOL_TIME);
        for (String name : List.of("etc", "tmp", "hello", "dev", "proc", "sys", "run", "work")) {
            assertTrue(listing.contains("/" + name + "/"), name + " in " + listing);
        }
        assertEquals("from the image\n", HostCommand.run(List.of("debugfs", "-R", "cat /etc/hello", disk.toString()),
                TOOL_TIME).lines().filter(l -> !l.startsWith("debugfs")).findFirst().orElse("") + "\n");
        try (var left = Files.list(disk.getParent())) {
            assertEquals(List.of(disk), left.toList(), "no staging file is left");
        }

        Files.setLastModifiedTime(disk, FileTime.fromMillis(0));
        assertEquals(disk, new RootDisks().diskOf(image(rootfs)));
        assertEquals(0, Files.getLastModifiedTime(disk).toMillis(), "the next VM of the image boots the same disk");
    }

    @Test
    void anImageWhoseMountpointIsALinkCannotRunInAVm() throws IOException {
        Path rootfs = Files.createDirectories(dir.resolve("sha256-b/rootfs"));
        Files.createSymbolicLink(rootfs.resolve("tmp"), Path.of("var/tmp"));
        ApiException e = assertThrows(ApiException.class, () -> new RootDisks().diskOf(image(rootfs)));
        assertEquals(400, e.status());
        assertTrue(e.getMessage().contains("/tmp"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("sha256-b/derived/" + RootDisks.FILE)));
    }
}
