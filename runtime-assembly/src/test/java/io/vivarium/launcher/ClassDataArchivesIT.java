package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/jvm.sh} removes a class-data archive older than a jar of the distribution (a rebuild),
 * which the JVM would otherwise ignore for good without writing a new one, and keeps a current one.
 */
class ClassDataArchivesIT {

    @TempDir
    Path dist;

    private void freshArchive(Path archive) throws Exception {
        Path jvmSh = Path.of(System.getProperty("vivarium.dist")).resolve("bin/jvm.sh");
        Process p = new ProcessBuilder("bash", "-c", "source \"$1\"; fresh_archive \"$2\" \"$3\"", "test",
                jvmSh.toString(), archive.toString(), dist.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "fresh_archive did not return");
        assertEquals(0, p.exitValue(), out);
    }

    @Test
    void anArchiveOlderThanAJarGoesAndACurrentOneStays() throws Exception {
        Path jar = Files.write(Files.createDirectories(dist.resolve("lib")).resolve("api.jar"), new byte[] {1});
        Path archive = Files.write(dist.resolve("vivarium.jsa"), new byte[] {2});
        Instant now = Instant.now();
        Files.setLastModifiedTime(jar, FileTime.from(now.minusSeconds(60)));
        Files.setLastModifiedTime(archive, FileTime.from(now));
        freshArchive(archive);
        assertTrue(Files.exists(archive), "written after every jar: kept");

        Files.setLastModifiedTime(jar, FileTime.from(now.plusSeconds(60)));
        freshArchive(archive);
        assertFalse(Files.exists(archive), "a jar rebuilt since: removed, for the next exit to write anew");

        freshArchive(archive);
        assertFalse(Files.exists(archive), "no archive: nothing to do");
    }
}
