package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
 * {@code bin/jvm.sh} names a class-data archive by a stamp of the distribution's jars, so that a
 * rebuild gets a new one (the JVM would ignore the old one for good without writing another), and
 * removes the archives of other stamps, also one written after the rebuild by a JVM started before.
 */
class ClassDataArchivesIT {

    @TempDir
    Path dist;

    private Path archiveFor(String name) throws Exception {
        Path jvmSh = Path.of(System.getProperty("vivarium.dist")).resolve("bin/jvm.sh");
        Process p = new ProcessBuilder("bash", "-c", "source \"$1\"; archive_for \"$2\" \"$3\"", "test",
                jvmSh.toString(), dist.toString(), name).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "archive_for did not return");
        assertEquals(0, p.exitValue(), out);
        return Path.of(out);
    }

    @Test
    void aRebuildGetsAnArchiveOfItsOwnAndTheOthersGo() throws Exception {
        Path jar = Files.write(Files.createDirectories(dist.resolve("lib")).resolve("api.jar"), new byte[] {1});
        Files.setLastModifiedTime(jar, FileTime.from(Instant.now().minusSeconds(60)));
        Path before = archiveFor("cli");
        assertEquals(dist, before.getParent());
        assertTrue(before.getFileName().toString().matches("cli-\\d+\\.jsa"), before.toString());
        assertEquals(before, archiveFor("cli"), "the same jars: the same archive");
        Files.write(before, new byte[] {2});
        Path daemon = Files.write(archiveFor("daemon"), new byte[] {3});
        Path legacy = Files.write(dist.resolve("vivarium-cli.jsa"), new byte[] {4});

        Files.write(jar, new byte[] {1, 1}); // rebuilt
        Path after = archiveFor("cli");
        assertNotEquals(before, after, "a rebuild names another archive");
        assertFalse(Files.exists(before), "the archive of the jars before goes");
        assertFalse(Files.exists(legacy), "so does one of the name before the stamp");
        assertTrue(Files.exists(daemon), "the daemon's archive is the daemon's to renew");
    }
}
