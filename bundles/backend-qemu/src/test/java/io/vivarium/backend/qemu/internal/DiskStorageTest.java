package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.testkit.InertStrategy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskStorageTest {

    @TempDir
    Path dir;

    private Availability availability(DiskStorage disks) {
        QemuSettings settings = new QemuSettings(Path.of("/bin/true"), dir, "default", 256, 1, Duration.ofSeconds(5),
                dir.resolve("links"), dir.resolve("scratch"));
        try (QemuBackend backend = new QemuBackend(settings, Accelerator.detect(dir.resolve("none"), dir.resolve("none")),
                disks)) {
            return backend.availability();
        }
    }

    @Test
    void withoutAStrategyForDisksTheBackendIsUnavailableAndSaysWhatToInstall() {
        InertStrategy memoryOnly = InertStrategy.of("diffchain", true, ArtifactKind.MEMORY);
        Availability a = availability(DiskStorage.of(memoryOnly));
        assertFalse(a.available());
        assertTrue(a.reason().contains("no storage strategy for VM disks is installed")
                && a.reason().contains("storage-qcow2"), a.reason());
    }

    @Test
    void aStrategyForDisksThatCannotWorkHereIsNamed() {
        Availability a = availability(DiskStorage.of(InertStrategy.of("qcow2", false, ArtifactKind.DISK)));
        assertFalse(a.available());
        assertTrue(a.reason().contains("no storage strategy for VM disks works in " + dir + " (qcow2 registered"),
                a.reason());
    }

    @Test
    void theFirstStrategyThatWorksForDisksIsChosenAndOneThatLeavesIsForgotten() {
        InertStrategy broken = InertStrategy.of("broken", false, ArtifactKind.DISK);
        InertStrategy first = InertStrategy.of("first", true, ArtifactKind.DISK, ArtifactKind.MEMORY);
        InertStrategy second = InertStrategy.of("second", true, ArtifactKind.DISK);
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
