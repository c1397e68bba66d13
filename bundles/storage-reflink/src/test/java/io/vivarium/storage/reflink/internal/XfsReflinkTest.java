package io.vivarium.storage.reflink.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The strategy on a loop-mounted XFS image with reflink, where clones must really be made:
 * needs root and {@code mkfs.xfs} (Debian xfsprogs), skipped with the reason otherwise.
 */
class XfsReflinkTest {

    @TempDir
    Path tmp;

    private Path mount;

    @BeforeEach
    void mountXfs() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/sbin/mkfs.xfs")) || Files.isExecutable(Path.of("/sbin/mkfs.xfs")),
                "mkfs.xfs is missing: apt-get install xfsprogs");
        assumeTrue("root".equals(System.getProperty("user.name")), "loop-mounting an XFS image needs root");
        Path image = tmp.resolve("xfs.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(512L << 20);
        }
        run("mkfs.xfs", "-q", "-m", "reflink=1", image.toString());
        mount = Files.createDirectories(tmp.resolve("mnt"));
        assumeTrue(run("mount", "-o", "loop", image.toString(), mount.toString()) == 0,
                "cannot loop-mount an XFS image here");
    }

    @AfterEach
    void unmount() throws Exception {
        if (mount != null) {
            run("umount", mount.toString());
        }
    }

    @Test
    void filesAndTreesAreClonedNotCopied() throws IOException {
        ReflinkStrategy strategy = new ReflinkStrategy();
        assertTrue(strategy.supports(ArtifactKind.WORKSPACE, mount));
        Path big = mount.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
            f.write(new byte[8 << 20]);
        }
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, big, null, mount.resolve("stored.img"), null);
        assertEquals(ReflinkStrategy.MODE_REFLINK, stored.mode());
        assertEquals(0, stored.bytesWritten());
        StoredArtifact child = strategy.materialise(stored, mount.resolve("child.img"), null);
        assertEquals(ReflinkStrategy.MODE_REFLINK, child.mode());
        Files.writeString(child.path(), "child");
        assertEquals(8 << 20, Files.size(stored.path()));

        Path tree = ReflinkStrategyTest.tree(mount.resolve("tree"));
        StoredArtifact copy = strategy.store(ArtifactKind.WORKSPACE, tree, null, mount.resolve("tree-copy"), null);
        assertEquals(ReflinkStrategy.MODE_REFLINK, copy.mode());
        assertEquals("world!", Files.readString(copy.path().resolve("sub/b.txt")));
        assertEquals(List.of("child.img", "disk.img", "stored.img", "tree", "tree-copy"),
                ReflinkStrategyTest.names(mount).stream().filter(n -> !n.equals("lost+found")).toList());
    }

    @Test
    void aCloneFromAnotherFilesystemFallsBackToACopyAndSaysSo() throws IOException {
        ReflinkStrategy strategy = new ReflinkStrategy();
        Path outside = Files.writeString(tmp.resolve("outside.txt"), "outside");
        StoredArtifact stored = strategy.store(ArtifactKind.DISK, outside, null, mount.resolve("in.txt"), null);
        assertEquals(ReflinkStrategy.MODE_COPY, stored.mode());
        assertEquals("outside", Files.readString(stored.path()));
    }

    private static int run(String... argv) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", argv) + " hung");
        if (p.exitValue() != 0) {
            System.err.println(String.join(" ", argv) + ": " + out);
        }
        return p.exitValue();
    }
}
