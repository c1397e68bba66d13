package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** This JVM stands in for a QEMU: it maps a file privately, as a child maps its snapshot's RAM, and writes some pages. */
class DirtyPagesTest {

    private static final int PAGES = 64;

    @TempDir
    Path dir;

    @Test
    void thePagesWrittenIntoAPrivateMappingAreFoundAndLaidOverACopyOfTheFile() throws Exception {
        Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/self/pagemap")), "no /proc/self/pagemap here");
        byte[] content = new byte[PAGES * DirtyPages.PAGE];
        new Random(7).nextBytes(content);
        Path ram = Files.write(dir.resolve("memory.ram"), content);
        try (FileChannel channel = FileChannel.open(ram, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MappedByteBuffer mapping = channel.map(FileChannel.MapMode.PRIVATE, 0, content.length);
            for (int page = 0; page < PAGES; page++) {
                mapping.get(page * DirtyPages.PAGE); // read: a page of the file, not dirty
            }
            byte[] expected = content.clone();
            for (int page : new int[] {3, 4, 5, 40, 63}) {
                mapping.put(page * DirtyPages.PAGE + 17, (byte) ~content[page * DirtyPages.PAGE + 17]);
                expected[page * DirtyPages.PAGE + 17] = (byte) ~content[page * DirtyPages.PAGE + 17];
            }

            DirtyPages dirty = DirtyPages.read(ProcessHandle.current().pid(), ram);
            assertEquals(5, dirty.count(), "pages read only are still the file's");
            assertArrayEquals(content, Files.readAllBytes(ram), "a private mapping never writes the file");
            Path flat = Files.copy(ram, dir.resolve("flat"), StandardCopyOption.REPLACE_EXISTING);
            dirty.writeOver(flat);
            byte[] assembled = Files.readAllBytes(flat);
            assertEquals(-1, Arrays.mismatch(expected, assembled), "the flat file is the guest's RAM");
            mapping.get(0); // keeps the mapping alive until here
        }
    }

    @Test
    void aFileTheProcessDoesNotMapIsAnError() throws Exception {
        Path other = Files.write(dir.resolve("other.ram"), new byte[DirtyPages.PAGE]);
        IOException e = assertThrows(IOException.class, () -> DirtyPages.read(ProcessHandle.current().pid(), other));
        assertEquals(true, e.getMessage().contains("does not map"), e.getMessage());
    }
}
