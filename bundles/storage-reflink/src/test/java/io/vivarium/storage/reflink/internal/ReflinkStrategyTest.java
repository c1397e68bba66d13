package io.vivarium.storage.reflink.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The strategy on whatever filesystem the temporary directory is on (ext4 or tmpfs here: the fallback). */
class ReflinkStrategyTest {

    @TempDir
    Path dir;

    private final ReflinkStrategy strategy = new ReflinkStrategy();

    @Test
    void aTreeIsCopiedWholeAndTheModeIsTheOneTheFilesystemAllows() throws IOException {
        Path source = tree(dir.resolve("source"));
        StoredArtifact stored = strategy.store(ArtifactKind.WORKSPACE, source, null, dir.resolve("image"), null);
        boolean clones = strategy.supports(ArtifactKind.WORKSPACE, dir);
        assertEquals(clones ? ReflinkStrategy.MODE_REFLINK : ReflinkStrategy.MODE_COPY, stored.mode());
        assertEquals(clones ? 0 : 11, stored.bytesWritten());
        assertEquals("hello", Files.readString(dir.resolve("image/a.txt")));
        assertEquals("world!", Files.readString(dir.resolve("image/sub/b.txt")));
        assertEquals(0, stored.depth());
        assertEquals(List.of("image", "source"), names(dir));
    }

    @Test
    void aMaterialisedCopyIsIndependentOfTheStoredOne() throws IOException {
        Path file = Files.writeString(dir.resolve("disk.img"), "original");
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, file, null, dir.resolve("stored.img"), null);
        StoredArtifact child = strategy.materialise(stored, dir.resolve("child.img"), null);
        Files.writeString(child.path(), "changed by the child");
        assertEquals("original", Files.readString(stored.path()));
        assertEquals("original", Files.readString(file));
    }

    @Test
    void anExistingTargetIsRefusedAndLeftAlone() throws IOException {
        Path file = Files.writeString(dir.resolve("a"), "a");
        Path target = Files.writeString(dir.resolve("b"), "b");
        assertThrows(IOException.class, () -> strategy.store(ArtifactKind.DISK, file, null, target, null));
        assertEquals("b", Files.readString(target));
    }

    @Test
    void aFailedCopyLeavesNoStagingBehind() throws IOException {
        Path missing = dir.resolve("missing");
        IOException e = assertThrows(IOException.class,
                () -> strategy.store(ArtifactKind.DISK, missing, null, dir.resolve("t"), null));
        assertTrue(e.getMessage().contains("missing"), e.getMessage());
        assertEquals(List.of(), names(dir));
    }

    @Test
    void verifyAndDelete() throws IOException {
        Path source = tree(dir.resolve("source"));
        StoredArtifact stored = strategy.store(ArtifactKind.WORKSPACE, source, null, dir.resolve("image"), null);
        strategy.verify(stored);
        strategy.delete(stored);
        assertFalse(Files.exists(stored.path()));
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
