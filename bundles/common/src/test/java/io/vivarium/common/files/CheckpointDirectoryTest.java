package io.vivarium.common.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointDirectoryTest {
    @TempDir
    Path dir;

    @Test
    void aCheckpointIsStagedThenPublishedListedReadAndDeleted() throws Exception {
        CheckpointDirectory checkpoints = new CheckpointDirectory(dir.resolve("checkpoints"), "sb-1", CheckpointDirectory::filesIn);
        Path staging = checkpoints.stage("t1");
        Files.writeString(staging.resolve("memory"), "12345");
        assertTrue(checkpoints.list().isEmpty(), "a staged checkpoint is not listed: a crash now leaves none");

        CheckpointInfo info = checkpoints.publish("t1", staging, "full+copy", Map.of("vmm", "v1"));
        assertEquals("t1", info.tag());
        assertEquals("full+copy", info.mode());
        assertFalse(Files.exists(staging));
        assertEquals(List.of(info), checkpoints.list());
        assertEquals("v1", checkpoints.info("t1").path("vmm").asText());
        assertTrue(info.sizeBytes() >= 5, "sized by its files: " + info.sizeBytes());

        assertEquals(409, assertThrows(ApiException.class, () -> checkpoints.stage("t1")).status());
        assertEquals(404, assertThrows(ApiException.class, () -> checkpoints.existing("t2")).status());
        assertTrue(checkpoints.delete("t1"));
        assertFalse(checkpoints.delete("t1"));
        assertTrue(checkpoints.list().isEmpty());
    }

    @Test
    void aStagingDirectoryLeftByACrashIsClearedByTheNextStage() throws Exception {
        CheckpointDirectory checkpoints = new CheckpointDirectory(dir, "sb-1", CheckpointDirectory::filesIn);
        Path left = checkpoints.stage("t1");
        Files.writeString(left.resolve("half-written"), "x");
        Path again = checkpoints.stage("t1");
        assertEquals(left, again);
        try (var files = Files.list(again)) {
            assertEquals(0, files.count());
        }
    }

    @Test
    void aSaveThatFailsLeavesNoCheckpointAndSaysWhy() throws Exception {
        CheckpointDirectory checkpoints = new CheckpointDirectory(dir, "sb-1", CheckpointDirectory::filesIn);
        ApiException e = assertThrows(ApiException.class, () -> checkpoints.take("t1", staging -> {
            Files.writeString(staging.resolve("memory"), "half");
            throw new java.io.IOException("No space left on device");
        }));
        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("cannot checkpoint sandbox sb-1 as t1: No space left on device"), e.getMessage());
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count(), "neither the checkpoint nor its staging directory is left");
        }
        CheckpointInfo taken = checkpoints.take("t1", staging -> new CheckpointDirectory.Saved("full+copy", Map.of()));
        assertEquals(List.of(taken), checkpoints.list());
    }

    @Test
    void anUnreadableInfoIsAConflictThatSaysToDeleteIt() throws Exception {
        CheckpointDirectory checkpoints = new CheckpointDirectory(dir, "sb-1", CheckpointDirectory::filesIn);
        Files.createDirectories(dir.resolve("t1"));
        ApiException e = assertThrows(ApiException.class, () -> checkpoints.info("t1"));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("delete it"), e.getMessage());
    }
}
