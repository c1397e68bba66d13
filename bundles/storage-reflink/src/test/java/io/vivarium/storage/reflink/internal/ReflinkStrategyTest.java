package io.vivarium.storage.reflink.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.files.StagedFile;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the conformance suite does not check, on the host's filesystem (ext4 here: the fallback). */
class ReflinkStrategyTest {

    @TempDir
    Path dir;

    private final ReflinkStrategy strategy = new ReflinkStrategy();

    static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(Duration.ofMinutes(1)));
    }

    @Test
    void aCopyCountsTheBytesItWrote() throws IOException {
        StoredArtifact stored = strategy.store(ArtifactKind.WORKSPACE, tree(dir.resolve("source")), null,
                dir.resolve("image"), operation());
        boolean clones = strategy.supports(ArtifactKind.WORKSPACE, dir);
        assertEquals(clones ? ReflinkStrategy.MODE_REFLINK : ReflinkStrategy.MODE_COPY, stored.mode());
        assertEquals(clones ? 0 : 11, stored.bytesWritten());
    }

    @Test
    void anExistingTargetIsRefusedAndLeftAlone() throws IOException {
        Path file = Files.writeString(dir.resolve("a"), "a");
        Path taken = Files.writeString(dir.resolve("b"), "b");
        assertThrows(FileAlreadyExistsException.class,
                () -> strategy.store(ArtifactKind.DISK, file, null, taken, operation()));
        assertEquals("b", Files.readString(taken));

        Path tree = tree(dir.resolve("tree"));
        Path emptyFolder = Files.createDirectory(dir.resolve("empty"));
        assertThrows(FileAlreadyExistsException.class,
                () -> strategy.store(ArtifactKind.WORKSPACE, tree, null, emptyFolder, operation()));
        assertEquals(List.of(), names(emptyFolder), "an empty folder is not replaced either");
    }

    @Test
    void stagingLeftByAKilledCopyGoesWithTheNextAttemptOrTheDelete() throws IOException {
        Path tree = tree(dir.resolve("tree"));
        Path target = dir.resolve("image");
        tree(StagedFile.stagingPath(target));
        StoredArtifact stored = strategy.store(ArtifactKind.WORKSPACE, tree, null, target, operation());
        assertEquals(List.of("image", "tree"), names(dir));

        tree(StagedFile.stagingPath(target));
        strategy.delete(stored);
        assertEquals(List.of("tree"), names(dir));
        strategy.delete(stored);
        assertThrows(IOException.class, () -> strategy.verify(stored));
    }

    static Path tree(Path root) throws IOException {
        Files.createDirectories(root.resolve("sub"));
        Files.writeString(root.resolve("a.txt"), "hello", StandardCharsets.UTF_8);
        Files.writeString(root.resolve("sub/b.txt"), "world!", StandardCharsets.UTF_8);
        return root;
    }

    static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
