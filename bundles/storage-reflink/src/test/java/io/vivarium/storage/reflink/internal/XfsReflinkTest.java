package io.vivarium.storage.reflink.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the conformance suite does not check on a loop-mounted XFS with reflink (skipped with the
 * reason where this host cannot mount one): a clone writes nothing, and a source on another
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
