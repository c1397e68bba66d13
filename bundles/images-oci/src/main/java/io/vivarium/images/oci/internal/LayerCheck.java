package io.vivarium.images.oci.internal;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.Set;
import java.util.zip.GZIPInputStream;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Reads a layer blob whole before umoci unpacks it: its SHA-256 must be its digest, its media type
 * one umoci unpacks, and every entry must stay inside the root ({@code ..} in a name or a hard
 * link's target is refused), be no device node, and keep within the sizes given (a sparse file by
 * its real size). A refusal here says which entry, early; the root's containment itself is umoci's
 * (every path it writes is resolved within the bundle, links included), which this does not replace.
 */
final class LayerCheck {

    /** Why a layer is refused: a fault of the image, not of the host. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }

    private static final Set<String> PLAIN = Set.of("application/vnd.oci.image.layer.v1.tar",
            "application/vnd.docker.image.rootfs.diff.tar");
    private static final Set<String> GZIP = Set.of("application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.docker.image.rootfs.diff.tar.gzip");

    /**
     * The tar's block and record size: one 512-byte block, as a layer ends where its writer stopped
     * (umoci's, for one, are not padded to tar's 10 KiB record), which a reader of whole records
     * takes for a truncated archive.
     */
    private static final int TAR_BLOCK = 512;

    private final long maxEntryBytes;
    private final long maxImageBytes;
    private long imageBytes;

    /**
     * @param maxEntryBytes the largest file an image may hold
     * @param maxImageBytes the most its files may hold together, over all its layers
     */
    LayerCheck(long maxEntryBytes, long maxImageBytes) {
        this.maxEntryBytes = maxEntryBytes;
        this.maxImageBytes = maxImageBytes;
    }

    /** Checks the layer in {@code blob}; throws {@link Refused} saying which entry, and why. */
    void check(Path blob, OciLayout.Layer layer) throws IOException, Refused {
        boolean gzip = GZIP.contains(layer.mediaType());
        if (!gzip && !PLAIN.contains(layer.mediaType())) {
            throw new Refused("layer " + layer.digest() + " has the media type '" + layer.mediaType()
                    + "', which is not unpacked here (only tar and tar+gzip layers are)");
        }
        MessageDigest sha = Sha256.hasher();
        try (InputStream file = new DigestInputStream(new BufferedInputStream(Files.newInputStream(blob), 1 << 16), sha);
                InputStream tar = gzip ? new GZIPInputStream(file, 1 << 16) : file;
                TarArchiveInputStream entries = new TarArchiveInputStream(tar, TAR_BLOCK, TAR_BLOCK)) {
            boolean lastWhole = true;
            for (TarArchiveEntry e; (e = next(entries, tar, lastWhole)) != null;) {
                checkEntry(e, layer);
                lastWhole = entries.transferTo(java.io.OutputStream.nullOutputStream()) == e.getSize();
            }
            file.transferTo(java.io.OutputStream.nullOutputStream()); // the tar's padding and anything after: the digest covers the whole blob
        }
        String actual = Sha256.digestOf(sha);
        if (!actual.equals(layer.digest())) {
            throw new Refused("layer " + layer.digest() + " does not match its digest: its bytes hash to " + actual);
        }
    }

    /**
     * The next entry, or null at the end. A writer that stops right after the last entry's data (no
     * padding, no end blocks: umoci 0.4.7's layers end so, and umoci and Go's tar read them) ends the
     * layer there; a stream that ends inside an entry is truncated.
     */
    private static TarArchiveEntry next(TarArchiveInputStream entries, InputStream tar, boolean lastWhole) throws IOException {
        try {
            return entries.getNextEntry();
        } catch (IOException truncated) {
            if (lastWhole && tar.read() < 0) {
                return null;
            }
            throw truncated;
        }
    }

    private void checkEntry(TarArchiveEntry e, OciLayout.Layer layer) throws Refused {
        String where = "layer " + layer.digest() + ": entry '" + e.getName() + "'";
        if (leaves(e.getName())) {
            throw new Refused(where + " leads out of the root");
        }
        if (e.isLink() && leaves(e.getLinkName())) {
            throw new Refused(where + " is a hard link to '" + e.getLinkName() + "', out of the root");
        }
        if (e.isCharacterDevice() || e.isBlockDevice()) {
            throw new Refused(where + " is a device node, which an image may not bring");
        }
        // a sparse file's stored size is less than what an unpacker writes of it: count that
        long size = Math.max(e.getSize(), e.getRealSize());
        if (size > maxEntryBytes) {
            throw new Refused(where + " is " + size + " bytes, over the " + maxEntryBytes + " a file may be");
        }
        imageBytes += size;
        if (imageBytes > maxImageBytes) {
            throw new Refused(where + ": the image's files pass " + maxImageBytes + " bytes, the most an image may hold");
        }
    }

    /** Whether a name in a tar, read from the root, has a {@code ..} segment. */
    static boolean leaves(String name) {
        for (String segment : name.split("/")) {
            if (segment.equals("..")) {
                return true;
            }
        }
        return false;
    }
}
