package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.io.OutputStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BoundedLogTest {

    @TempDir
    Path dir;

    @Test
    void aLogPastItsMaximumKeepsItsLastWholeLinesAndTheWriterGoesOnAtItsEnd() throws IOException {
        Path log = dir.resolve("console.log");
        BoundedLog bound = new BoundedLog(100, 30);
        // the writer keeps its file open in append mode, as QEMU does
        try (OutputStream qemu = Files.newOutputStream(log, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            for (int i = 0; i < 20; i++) {
                qemu.write(("line " + i + "\n").getBytes(StandardCharsets.US_ASCII));
            }
            qemu.flush();

            assertTrue(bound.cap(log));
            assertEquals("line 17\nline 18\nline 19\n", Files.readString(log));

            qemu.write("after\n".getBytes(StandardCharsets.US_ASCII));
            qemu.flush();
        }
        assertEquals("line 17\nline 18\nline 19\nafter\n", Files.readString(log));
    }

    @Test
    void aLogWithinItsMaximumOrMissingIsLeftAlone() throws IOException {
        Path log = Files.writeString(dir.resolve("console.log"), "x".repeat(100));
        BoundedLog bound = new BoundedLog(100, 30);

        assertFalse(bound.cap(log));
        assertEquals(100, Files.size(log));
        assertFalse(bound.cap(dir.resolve("missing.log")));
    }

    @Test
    void aTailWithoutANewlineIsKeptWhole() throws IOException {
        Path log = Files.writeString(dir.resolve("console.log"), "y".repeat(200));

        assertTrue(new BoundedLog(100, 30).cap(log));
        assertEquals("y".repeat(30), Files.readString(log));
    }

    @Test
    void keepMustFitInTheMaximum() {
        assertThrows(IllegalArgumentException.class, () -> new BoundedLog(10, 11));
    }
}
