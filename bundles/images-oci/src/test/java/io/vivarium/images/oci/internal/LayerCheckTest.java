package io.vivarium.images.oci.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Layer blobs written here, whole, cut short, mislabelled. */
class LayerCheckTest {
    private static final String TAR = "application/vnd.oci.image.layer.v1.tar";
    @TempDir
    Path tmp;

    @Test
    void aWholeLayerAndOneWhoseWriterStoppedAfterTheLastEntrysDataPass() throws Exception {
        byte[] tar = tarOf("a.txt", new byte[1000]);
        assertDoesNotThrow(() -> check(tar, TAR));
        // no padding after the last data, no end blocks: as umoci 0.4.7 writes its layers
        assertDoesNotThrow(() -> check(Arrays.copyOf(tar, 512 + 1000), TAR));
    }

    @Test
    void aLayerCutInsideAnEntryIsTruncated() throws Exception {
        byte[] tar = tarOf("a.txt", new byte[1000]);
        IOException cut = assertThrows(IOException.class, () -> check(Arrays.copyOf(tar, 512 + 600), TAR));
        assertTrue(cut.getMessage().toLowerCase().contains("truncated"), cut.getMessage());
    }

    @Test
    void aBlobThatIsNotWhatItsDigestSaysOrOfAMediaTypeNotUnpackedIsRefused() throws Exception {
        byte[] tar = tarOf("a.txt", new byte[10]);
        Path blob = Files.write(tmp.resolve("blob"), tar);
        OciLayout.Layer wrong = new OciLayout.Layer("sha256:" + "0".repeat(64), TAR, tar.length);
        LayerCheck.Refused bad = assertThrows(LayerCheck.Refused.class, () -> new LayerCheck(1 << 20, 1 << 30).check(blob, wrong));
        assertTrue(bad.getMessage().contains("does not match its digest"), bad.getMessage());

        OciLayout.Layer zstd = new OciLayout.Layer(digest(tar), "application/vnd.oci.image.layer.v1.tar+zstd", tar.length);
        LayerCheck.Refused media = assertThrows(LayerCheck.Refused.class, () -> new LayerCheck(1 << 20, 1 << 30).check(blob, zstd));
        assertTrue(media.getMessage().contains("tar+zstd"), media.getMessage());
    }

    @Test
    void theImagesFilesTogetherMayNotPassTheLimit() throws Exception {
        byte[] tar = tarOf("a.txt", new byte[4000]);
        LayerCheck check = new LayerCheck(1 << 20, 6000);
        Path blob = Files.write(tmp.resolve("blob"), tar);
        OciLayout.Layer layer = new OciLayout.Layer(digest(tar), TAR, tar.length);
        check.check(blob, layer);
        LayerCheck.Refused over = assertThrows(LayerCheck.Refused.class, () -> check.check(blob, layer));
        assertTrue(over.getMessage().contains("the most an image may hold"), over.getMessage());
    }

    private void check(byte[] tar, String mediaType) throws Exception {
        Path blob = Files.write(tmp.resolve("blob-" + System.nanoTime()), tar);
        new LayerCheck(1 << 20, 1 << 30).check(blob, new OciLayout.Layer(digest(tar), mediaType, tar.length));
    }

    private static byte[] tarOf(String name, byte[] content) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            TarArchiveEntry e = new TarArchiveEntry(name);
            e.setSize(content.length);
            t.putArchiveEntry(e);
            t.write(content);
            t.closeArchiveEntry();
        }
        return out.toByteArray();
    }

    private static String digest(byte[] bytes) throws Exception {
        return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }
}
