package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import io.vivarium.testkit.OciTestImages;

/** Layers crafted for the refusals: one entry each, added to a test image with {@code umoci raw add-layer}. */
final class TestImage {

    private TestImage() {
    }

    /** Adds a layer of one entry to the image tagged {@code app} in {@code layout}, made as {@code entry} says. */
    static void addLayer(Path layout, TarArchiveEntry entry, byte[] content) throws IOException {
        Path tar = layout.resolveSibling("layer-" + System.nanoTime() + ".tar");
        try (OutputStream out = Files.newOutputStream(tar); TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            entry.setSize(content.length);
            t.putArchiveEntry(entry);
            t.write(content);
            t.closeArchiveEntry();
        }
        OciTestImages.umoci("raw", "add-layer", "--image", layout + ":app", tar.toString());
    }
}
