package io.vivarium.storage.reflink.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the conformance suite does not check on a loop-mounted XFS with reflink (skipped with the
 * reason where this host cannot mount one): a clone writes nothing and shares its source's blocks, and a source on another
 * filesystem is copied and says so.
 */
class XfsReflinkTest {

    @TempDir
    Path tmp;

    private XfsLoopMount xfs;

    @BeforeEach
    void mountXfs() throws IOException {
        xfs = XfsLoopMount.create(tmp.resolve("loop"));
    }

    @AfterEach
    void unmount() throws IOException {
        if (xfs != null) {
            xfs.close();
        }
    }

    @Test
    void aCloneWritesNothing() throws IOException {
        ReflinkStrategy strategy = new ReflinkStrategy();
        Path disk = Files.write(xfs.dir().resolve("disk.img"), new byte[8 << 20]);
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, disk, null, xfs.dir().resolve("stored.img"),
                ReflinkStrategyTest.operation());
        assertEquals(ReflinkStrategy.MODE_REFLINK, stored.mode());
        assertEquals(0, stored.bytesWritten());
        Path tree = ReflinkStrategyTest.tree(xfs.dir().resolve("tree"));
        StoredArtifact copy = strategy.store(ArtifactKind.WORKSPACE, tree, null, xfs.dir().resolve("tree-copy"),
                ReflinkStrategyTest.operation());
        assertEquals(ReflinkStrategy.MODE_REFLINK, copy.mode());
        assertEquals(0, copy.bytesWritten());
    }

    /** A file materialised in this process (copy_file_range, no cp) takes no new blocks: four 32 MiB clones. */
    @Test
    void materialisedCopiesShareTheBlocksOfTheirSource() throws IOException {
        ReflinkStrategy strategy = new ReflinkStrategy();
        byte[] data = new byte[32 << 20];
        new Random(7).nextBytes(data);
        Path disk = Files.write(xfs.dir().resolve("disk.img"), data);
        try (FileChannel channel = FileChannel.open(disk, StandardOpenOption.WRITE)) {
            channel.force(true);
        }
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, disk, null, xfs.dir().resolve("stored.img"),
                ReflinkStrategyTest.operation());
        FileStore store = Files.getFileStore(xfs.dir());
        long free = store.getUnallocatedSpace();
        for (int i = 0; i < 4; i++) {
            StoredArtifact copy = strategy.materialise(stored, xfs.dir().resolve("child-" + i + ".img"),
                    ReflinkStrategyTest.operation());
            assertEquals(ReflinkStrategy.MODE_REFLINK, copy.mode());
            assertArrayEquals(data, Files.readAllBytes(copy.path()));
        }
        long taken = free - store.getUnallocatedSpace();
        assertTrue(taken < (8 << 20), "four clones of 32 MiB took " + (taken >> 20) + " MiB");
    }

    @Test
    void aCloneFromAnotherFilesystemFallsBackToACopyAndSaysSo() throws IOException {
        ReflinkStrategy strategy = new ReflinkStrategy();
        Path outside = Files.writeString(tmp.resolve("outside.txt"), "outside");
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, outside, null, xfs.dir().resolve("in.txt"),
                ReflinkStrategyTest.operation());
        assertEquals(ReflinkStrategy.MODE_COPY, stored.mode());
        assertEquals(7, stored.bytesWritten());
        assertEquals("outside", Files.readString(stored.path()));
    }
}
