package io.vivarium.storage.diffchain.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What is remembered stays bounded by the files that still exist unchanged. */
class VerifiedFilesTest {

    @TempDir
    Path dir;

    @Test
    void filesDeletedBehindItsBackAreDroppedOnceThereAreMany() throws IOException {
        VerifiedFiles files = new VerifiedFiles(Duration.ZERO);
        AtomicInteger reads = new AtomicInteger();
        VerifiedFiles.Reader<Long> size = p -> {
            reads.incrementAndGet();
            return Files.size(p);
        };
        Path kept = Files.writeString(dir.resolve("kept"), "kept");
        files.get(kept, size);
        List<Path> gone = new ArrayList<>();
        for (int i = 0; i < VerifiedFiles.SWEEP_ABOVE - 1; i++) {
            gone.add(Files.writeString(dir.resolve("gone" + i), "x"));
            files.get(gone.getLast(), size);
        }
        Path next = Files.writeString(dir.resolve("next"), "next"); // before the deletes: no inode of theirs
        for (Path p : gone) {
            Files.delete(p); // as core deletes a snapshot's folder, without the strategy
        }
        assertEquals(VerifiedFiles.SWEEP_ABOVE, files.remembered(), "no sweep yet");
        files.get(next, size);
        assertEquals(2, files.remembered(), "the deleted files were dropped, the two that exist kept");
        int before = reads.get();
        assertEquals(4L, files.get(kept, size).value());
        assertTrue(reads.get() == before, "and the kept one is still remembered");
    }
}
