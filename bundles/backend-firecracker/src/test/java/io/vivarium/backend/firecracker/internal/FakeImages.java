package io.vivarium.backend.firecracker.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A guest image's directory as build-image.sh makes it, with empty kernel and initramfs (nothing boots them here). */
final class FakeImages {
    private FakeImages() {
    }

    static Path write(Path imageDir, String name) throws IOException {
        Path dir = Files.createDirectories(imageDir.resolve(name + "-0000000000000000"));
        Files.writeString(dir.resolve("kernel"), "");
        Files.writeString(dir.resolve("initramfs.cpio.gz"), "");
        Files.writeString(dir.resolve("image.json"), "{\"agent\": \"vivarium\", \"cmdline\": \"console=ttyS0 panic=-1 quiet\"}");
        Files.createSymbolicLink(imageDir.resolve(name), dir.getFileName());
        return dir;
    }
}
