package io.vivarium.storage.qcow2.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.StagedFile;
import io.vivarium.testkit.StorageStrategySuite;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The storage conformance suite for VM disks, plus what is particular to qcow2 overlays. */
class Qcow2StorageTest extends StorageStrategySuite {

    static final Path QEMU_IMG = Path.of("/usr/bin/qemu-img");
    private static final Path QEMU_IO = Path.of("/usr/bin/qemu-io");
    private static final Duration TOOL = Duration.ofMinutes(1);
    private static final Qcow2Storage STORAGE = new Qcow2Storage(QEMU_IMG);

    /** A qcow2 disk; its content is what a guest reads from it. */
    static final ArtifactContent QCOW2 = new ArtifactContent() {
        @Override
        public void write(Path path, byte[] content) throws IOException {
            Path raw = path.resolveSibling(path.getFileName() + ".raw");
            try {
                Files.write(raw, content);
                HostCommand.run(List.of(QEMU_IMG.toString(), "convert", "-f", "raw", "-O", "qcow2", raw.toString(),
                        path.toString()), TOOL);
            } finally {
                Files.deleteIfExists(raw);
            }
        }

        @Override
        public void fill(Path path, long offset, int length, byte value) throws IOException {
            HostCommand.run(List.of(QEMU_IO.toString(), "-f", "qcow2", "-c",
                    "write -P " + (value & 0xff) + " " + offset + " " + length, path.toString()), TOOL);
        }

        @Override
        public byte[] read(Path path) throws IOException {
            Path raw = path.resolveSibling("." + path.getFileName() + ".read");
            try {
                HostCommand.run(List.of(QEMU_IMG.toString(), "convert", "-U", "-O", "raw", path.toString(),
                        raw.toString()), TOOL);
                return Files.readAllBytes(raw);
            } finally {
                Files.deleteIfExists(raw);
            }
        }
    };

    @BeforeAll
    static void needsQemuImg() {
        Assumptions.assumeTrue(Files.isExecutable(QEMU_IMG) && Files.isExecutable(QEMU_IO),
                "qemu-img and qemu-io are not installed (apt-get install qemu-utils)");
    }

    @Override
    protected StorageStrategy strategy() {
        return STORAGE;
    }

    @Override
    protected ArtifactKind kind() {
        return ArtifactKind.DISK;
    }

    @Override
    protected ArtifactContent content() {
        return QCOW2;
    }

    @Override
    protected Set<String> modes() {
        return Set.of(Qcow2Storage.MODE_OVERLAY, Qcow2Storage.MODE_FLAT);
    }

    private Path overlayOnBase() throws IOException {
        byte[] base = new byte[4 << 20];
        Arrays.fill(base, (byte) 7);
        Path image = dir.resolve("base.qcow2");
        QCOW2.write(image, base);
        Path disk = dir.resolve("disk.qcow2");
        STORAGE.materialise(new StoredArtifact(ArtifactKind.DISK, image, "flat", 0, null, null, 0), disk, operation());
        QCOW2.fill(disk, 0, 64 << 10, (byte) 9);
        return disk;
    }

    @Test
    void aDiskOnABackingFileIsStoredAsAnOverlayHoldingOnlyItsOwnClusters() throws IOException {
        Path disk = overlayOnBase();
        StoredArtifact stored = STORAGE.store(ArtifactKind.DISK, disk, null, dir.resolve("stored.qcow2"), operation());
        assertEquals(Qcow2Storage.MODE_OVERLAY, stored.mode());
        assertEquals(dir.resolve("base.qcow2"), stored.parent().path(), "its parent is the disk's backing file");
        assertEquals(1, stored.depth());
        assertEquals(Files.size(stored.path()), stored.bytesWritten());
        assertTrue(stored.bytesWritten() < 1 << 20, () -> "64 KiB changed on a 4 MiB disk, yet " + stored.bytesWritten()
                + " bytes were written");
        assertArrayEquals(QCOW2.read(disk), QCOW2.read(stored.path()));
        STORAGE.verify(stored);
    }

    @Test
    void materialiseMakesAnEmptyOverlayOnTheStoredDisk() throws IOException {
        Path disk = overlayOnBase();
        StoredArtifact base = new StoredArtifact(ArtifactKind.DISK, dir.resolve("base.qcow2"), "flat", 0, null, null, 0);
        StoredArtifact live = STORAGE.materialise(base, dir.resolve("live.qcow2"), operation());
        assertEquals(Qcow2Storage.MODE_OVERLAY, live.mode());
        assertEquals(base, live.parent());
        assertTrue(live.bytesWritten() < 1 << 20, "an empty overlay is a few clusters of metadata");
        assertFalse(Files.exists(StagedFile.stagingPath(disk)));
    }

    @Test
    void aTargetThatExistsIsNeverReplaced() throws IOException {
        Path disk = overlayOnBase();
        Path taken = Files.writeString(dir.resolve("taken.qcow2"), "mine");
        assertThrows(FileAlreadyExistsException.class,
                () -> STORAGE.store(ArtifactKind.DISK, disk, null, taken, operation()));
        assertEquals("mine", Files.readString(taken));
    }

    @Test
    void verifyNamesALinkWhoseBackingFileIsNotTheRecordedParent() throws IOException {
        Path disk = overlayOnBase();
        StoredArtifact stored = STORAGE.store(ArtifactKind.DISK, disk, null, dir.resolve("stored.qcow2"), operation());
        StoredArtifact other = new StoredArtifact(ArtifactKind.DISK, disk, "flat", 0, null, null, 0);
        StoredArtifact misrecorded = new StoredArtifact(ArtifactKind.DISK, stored.path(), stored.mode(),
                stored.bytesWritten(), null, other, 1);
        IOException e = assertThrows(IOException.class, () -> STORAGE.verify(misrecorded));
        assertTrue(e.getMessage().contains("not the recorded " + disk), e.getMessage());
    }

    @Test
    void verifyNamesADamagedImage() throws IOException {
        Path disk = overlayOnBase();
        StoredArtifact stored = STORAGE.store(ArtifactKind.DISK, disk, null, dir.resolve("stored.qcow2"), operation());
        try (FileChannel ch = FileChannel.open(stored.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            // the header's refcount table names the first refcount block: zero that block
            ByteBuffer offset = ByteBuffer.allocate(8);
            ch.read(offset, 48);
            offset.flip();
            ByteBuffer block = ByteBuffer.allocate(8);
            ch.read(block, offset.getLong());
            block.flip();
            ch.write(ByteBuffer.allocate(64 << 10), block.getLong());
        }
        IOException e = assertThrows(IOException.class, () -> STORAGE.verify(stored));
        assertTrue(e.getMessage().contains(stored.path().toString()), e.getMessage());
    }

    @Test
    void otherKindsAreNotHandled() {
        assertEquals(Set.of(ArtifactKind.DISK), STORAGE.kinds());
        assertFalse(STORAGE.supports(ArtifactKind.MEMORY, dir));
        assertFalse(new Qcow2Storage(dir.resolve("no-qemu-img")).supports(ArtifactKind.DISK, dir));
    }
}
