package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A gVisor image's description, and what it refuses: a checkpoint another runsc wrote, a missing memory file. */
class GvisorImageTest {

    private static final String RUNSC = "runsc version 0.0~20240729.0";

    @TempDir
    Path dir;

    @Test
    void theDescriptionKeepsTheRunscThatWroteTheCheckpoint() throws IOException {
        new GvisorImage(Optional.empty(), 64, RUNSC).write(dir);

        GvisorImage read = GvisorImage.read(dir);

        assertEquals(new GvisorImage(Optional.empty(), 64, RUNSC), read);
        read.requireRunsc(RUNSC);
    }

    @Test
    void anImageFromAnotherOrAnUnrecordedRunscIsAConflictThatSaysWhatToDo() {
        ApiException other = assertThrows(ApiException.class,
                () -> new GvisorImage(Optional.empty(), null, RUNSC).requireRunsc("runsc version release-20251110.0"));
        assertEquals(409, other.status());
        assertTrue(other.getMessage().contains("take the snapshot again"), other.getMessage());
        assertEquals(409, assertThrows(ApiException.class,
                () -> new GvisorImage(Optional.empty(), null, "").requireRunsc(RUNSC)).status());
    }

    @Test
    void eachOfTheCheckpointsThreeFilesIsNeeded() throws IOException {
        new GvisorImage(Optional.empty(), null, RUNSC).write(dir);
        Files.createDirectories(dir.resolve(GvisorImage.WORK));
        Files.createDirectories(dir.resolve(GvisorImage.MEMORY));
        Files.writeString(dir.resolve(GvisorImage.MEMORY).resolve("checkpoint.img"), "x");
        Files.writeString(dir.resolve(GvisorImage.MEMORY).resolve("pages_meta.img"), "x");

        assertTrue(GvisorImage.missing(dir).contains("pages.img"), GvisorImage.missing(dir));
        Files.writeString(dir.resolve(GvisorImage.MEMORY).resolve("pages.img"), "x");
        assertEquals(null, GvisorImage.missing(dir));
    }
}
