package io.vivarium.fingerprint.stat.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StatModeTest {

    @TempDir
    Path tmp;

    @Test
    void sizeColonWholeSecondsOfTheMtime() throws Exception {
        assertEquals("5:1893456000", fingerprint("hello", "2030-01-01T00:00:00.7Z"));
    }

    @Test
    void aFractionalMtimeBefore1970RoundsDownLikeStat() throws Exception {
        assertEquals("0:-14182941", fingerprint("", "1969-07-20T20:17:39.5Z"));
    }

    /** Sets the mtime with touch: Files.setLastModifiedTime sets 0 for a fractional time before 1970. */
    private String fingerprint(String content, String mtime) throws IOException, InterruptedException {
        Path file = Files.writeString(tmp.resolve("f"), content);
        assertEquals(0, Bounded.waitFor(new ProcessBuilder("touch", "-d", mtime, file.toString()).inheritIO().start(),
                Duration.ofSeconds(30), "touch -d " + mtime));
        return new StatMode().fingerprint(file, Files.readAttributes(file, BasicFileAttributes.class));
    }
}
