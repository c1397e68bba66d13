package io.vivarium.kit.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentBinaryTest {

    @TempDir
    Path tmp;

    @Test
    void writesTheEmbeddedBinaryExecutableAndReplacesADifferentFileWithANewOneNotInPlace() throws IOException {
        Path dir = tmp.resolve("data/agent");
        Path first = AgentBinary.install(dir);
        Files.write(first, new byte[] {1, 2, 3});
        Object inode = Files.getAttribute(first, "unix:ino");
        Path second = AgentBinary.install(dir);

        assertEquals(dir.resolve("vivarium-agent"), second);
        try (InputStream embedded = AgentBinary.class.getClassLoader().getResourceAsStream(AgentBinary.RESOURCE)) {
            assertArrayEquals(embedded.readAllBytes(), Files.readAllBytes(second));
        }
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(second)));
        assertNotEquals(inode, Files.getAttribute(second, "unix:ino"),
                "a running sandbox keeps the inode it was given: the file is replaced, never rewritten");
        try (var listing = Files.list(dir)) {
            assertEquals(List.of(second), listing.toList(), "no temporary file is left");
        }
    }

    @Test
    void leavesAFileThatHoldsTheBinaryAlready() throws IOException {
        Path dir = tmp.resolve("data/agent");
        Object inode = Files.getAttribute(AgentBinary.install(dir), "unix:ino");

        assertEquals(inode, Files.getAttribute(AgentBinary.install(dir), "unix:ino"));
        Files.setPosixFilePermissions(dir.resolve("vivarium-agent"), PosixFilePermissions.fromString("rwxrwxrwx"));
        assertNotEquals(inode, Files.getAttribute(AgentBinary.install(dir), "unix:ino"), "a wrong mode is replaced");
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("vivarium-agent"))));
    }
}
