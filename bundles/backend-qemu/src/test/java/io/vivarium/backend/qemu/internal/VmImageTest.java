package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VmImageTest {

    @TempDir
    Path dir;

    private VmImage image(Path imageDir, Path parentRam, Path guest) {
        StoredArtifact parent = parentRam == null ? null
                : new StoredArtifact(ArtifactKind.MEMORY, parentRam, "reflink", 0, "sha256:ab", null, 0);
        return new VmImage(256, 2, guest, "vivarium", QemuCommand.Incoming.DEVICES,
                new StoredArtifact(ArtifactKind.MEMORY, imageDir.resolve(VmImage.RAM), "diff", 4096, "sha256:cd", parent,
                        parent == null ? 0 : 1),
                new StoredArtifact(ArtifactKind.DISK, imageDir.resolve(VmImage.DISK), "qcow2-overlay", 0, null, null, 0));
    }

    private Path staged(String name) throws Exception {
        Path d = Files.createDirectories(dir.resolve(name));
        for (String f : new String[] {VmImage.RAM, VmImage.DISK, VmImage.DEVICES}) {
            Files.writeString(d.resolve(f), f);
        }
        return d;
    }

    @Test
    void ownArtifactsAreRecordedRelativeSoTheStagedImageCanBeRenamed() throws Exception {
        Path guest = Files.createDirectories(dir.resolve("default-01"));
        Path parentRam = Files.writeString(dir.resolve("parent.ram"), "p");
        Path staging = staged("image.staging");
        VmImage written = image(staging, parentRam, guest);
        written.write(staging);
        Path published = dir.resolve("image");
        Files.move(staging, published);

        VmImage read = VmImage.read(published);
        assertEquals(published.resolve(VmImage.RAM), read.memory().path());
        assertEquals(parentRam, read.memory().parent().path(), "a parent keeps its absolute path");
        assertEquals("sha256:ab", read.memory().parent().contentHash());
        assertEquals(1, read.memory().depth());
        assertEquals(QemuCommand.Incoming.DEVICES, read.incoming());
        assertEquals(256, read.memoryMib());
        assertEquals(2, read.vcpus());
        assertNull(VmImage.missing(published));
    }

    @Test
    void whatIsMissingIsNamed() throws Exception {
        Path guest = Files.createDirectories(dir.resolve("default-01"));
        Path parentRam = Files.writeString(dir.resolve("parent.ram"), "p");
        Path image = staged("image");
        image(image, parentRam, guest).write(image);

        Files.delete(parentRam);
        assertTrue(VmImage.missing(image).contains(parentRam.toString()), VmImage.missing(image));
        Files.delete(guest);
        assertTrue(VmImage.missing(image).contains(guest.toString()), VmImage.missing(image));
        Files.delete(image.resolve(VmImage.DEVICES));
        assertTrue(VmImage.missing(image).contains(VmImage.DEVICES), VmImage.missing(image));
    }
}
