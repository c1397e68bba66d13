package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskStorageTest {

    @TempDir
    Path dir;

    /** A strategy that only answers what it handles. */
    private record Strategy(String name, Set<ArtifactKind> kinds, boolean works) implements StorageStrategy {
        @Override
        public boolean supports(ArtifactKind kind, Path dir) {
            return works && kinds.contains(kind);
        }

        @Override
        public Set<String> modes() {
            return Set.of();
        }

        @Override
        public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
                OperationContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void verify(StoredArtifact stored) {
        }

        @Override
        public void delete(StoredArtifact stored) {
        }
    }

    private Availability availability(DiskStorage disks) {
        QemuSettings settings = new QemuSettings(Path.of("/bin/true"), dir, "default", 256, 1, Duration.ofSeconds(5),
                dir.resolve("links"));
        try (QemuBackend backend = new QemuBackend(settings, Accelerator.detect(dir.resolve("none"), dir.resolve("none")),
                disks)) {
            return backend.availability();
        }
    }

    @Test
    void withoutAStrategyForDisksTheBackendIsUnavailableAndSaysWhatToInstall() {
        Strategy memoryOnly = new Strategy("diffchain", Set.of(ArtifactKind.MEMORY), true);
        Availability a = availability(DiskStorage.of(memoryOnly));
        assertFalse(a.available());
        assertTrue(a.reason().contains("no storage strategy for VM disks is installed")
                && a.reason().contains("storage-qcow2"), a.reason());
    }

    @Test
    void aStrategyForDisksThatCannotWorkHereIsNamed() {
        Availability a = availability(DiskStorage.of(new Strategy("qcow2", Set.of(ArtifactKind.DISK), false)));
        assertFalse(a.available());
        assertTrue(a.reason().contains("no storage strategy for VM disks works in " + dir + " (qcow2 registered"),
                a.reason());
    }

    @Test
    void theFirstStrategyThatWorksForDisksIsChosenAndOneThatLeavesIsForgotten() {
        Strategy broken = new Strategy("broken", Set.of(ArtifactKind.DISK), false);
        Strategy first = new Strategy("first", Set.of(ArtifactKind.DISK, ArtifactKind.MEMORY), true);
        Strategy second = new Strategy("second", Set.of(ArtifactKind.DISK), true);
        DiskStorage disks = DiskStorage.of(broken, first, second);
        assertEquals("first", disks.forDir(dir).orElseThrow().name());
        disks.remove(first);
        assertEquals("second", disks.forDir(dir).orElseThrow().name());
        disks.remove(second);
        assertTrue(disks.forDir(dir).isEmpty());
        // with a disk strategy present the next check is the image's
        assertTrue(availability(DiskStorage.of(second)).reason().contains("no guest image default"));
    }
}
