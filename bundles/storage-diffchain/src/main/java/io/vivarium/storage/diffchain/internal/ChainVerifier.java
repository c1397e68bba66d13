package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Follows a chain from its top to its root and checks every link: a diff link's header, index and
 * body hash, that its parent holds the content it was made from (the parent's content hash equals
 * the one the link recorded), the same image size and consecutive depths; the root's content by
 * hashing it. What each file yields is remembered in {@link VerifiedFiles}, so a chain is hashed
 * once per version of its files, not once per fork. Errors name the link (1 is the top) and path.
 */
final class ChainVerifier {

    private final VerifiedFiles files;
    /** Files read whole so far (hashes computed): what the cache saves, for tests and benchmarks. */
    private final AtomicInteger reads = new AtomicInteger();

    ChainVerifier(VerifiedFiles files) {
        this.files = files;
    }

    int reads() {
        return reads.get();
    }

    VerifiedFiles files() {
        return files;
    }

    /**
     * The verified chain whose top is {@code top}.
     *
     * @param diff whether the top is a diff link, or null to tell from its first bytes
     * @param fresh read every file again instead of trusting what was remembered
     */
    Chain verify(Path top, Boolean diff, boolean fresh) throws IOException {
        Path path = top.toAbsolutePath().normalize();
        boolean isDiff = diff != null ? diff : sniff(path);
        List<Chain.Link> links = new ArrayList<>();
        Path child = null;
        DiffFile.Header childHeader = null;
        while (isDiff) {
            int n = links.size() + 1;
            requireFile(path, n, child);
            if (fresh) {
                files.forget(path);
            }
            VerifiedFiles.Verified<LinkData> v = files.get(path, this::readLink);
            DiffFile.Header h = v.value().header();
            if (childHeader != null) {
                requireParentOf(childHeader, child, n, path, h.contentHash(), h.size());
                if (h.depth() != childHeader.depth() - 1) {
                    throw new IOException("link " + n + " (" + path + ") claims depth " + h.depth() + ", but its child "
                            + child + " claims " + childHeader.depth());
                }
            }
            links.add(new Chain.Link(path, h, v.value().index(), v.version()));
            if (links.size() > DiffFile.MAX_DEPTH) {
                throw new IOException(top + " has a chain of more than " + DiffFile.MAX_DEPTH + " links (a loop?)");
            }
            child = path;
            childHeader = h;
            path = parentOf(path, h, n);
            isDiff = h.parentIsDiff();
        }
        int n = links.size() + 1;
        requireFile(path, n, child);
        if (childHeader != null && childHeader.depth() != 1) {
            throw new IOException("link " + n + " (" + path + ") is a plain file, but its child " + child + " claims depth "
                    + childHeader.depth());
        }
        if (fresh) {
            files.forget(path);
        }
        VerifiedFiles.Verified<BaseData> v = files.get(path, this::hashFile);
        if (childHeader != null) {
            requireParentOf(childHeader, child, n, path, v.value().hash(), v.value().size());
        }
        return new Chain(List.copyOf(links), new Chain.Base(path, v.value().size(), v.value().hash(), v.version()));
    }

    /** SHA-256 of a whole file, counted as one read. */
    byte[] hash(Path path) throws IOException {
        return hashFile(path).hash();
    }

    private record LinkData(DiffFile.Header header, long[] index) {
    }

    private record BaseData(long size, byte[] hash) {
    }

    private LinkData readLink(Path path) throws IOException {
        reads.incrementAndGet();
        try (FileChannel ch = FileChannel.open(path)) {
            DiffFile.Header h = DiffFile.read(ch, path);
            long[] index = DiffFile.readIndex(ch, h, path);
            if (!MessageDigest.isEqual(h.bodyHash(), DiffFile.bodyHash(ch, h))) {
                throw new IOException(path + " is damaged: its pages or index do not match the hash in its header");
            }
            return new LinkData(h, index);
        }
    }

    private BaseData hashFile(Path path) throws IOException {
        reads.incrementAndGet();
        MessageDigest digest = DiffFile.sha256();
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
        long size = 0;
        try (FileChannel ch = FileChannel.open(path)) {
            while (ch.read(buf.clear()) >= 0) {
                size += buf.flip().remaining();
                digest.update(buf);
            }
        }
        return new BaseData(size, digest.digest());
    }

    private static void requireParentOf(DiffFile.Header child, Path childPath, int n, Path parent, byte[] parentHash,
            long parentSize) throws IOException {
        if (!MessageDigest.isEqual(child.parentHash(), parentHash)) {
            throw new IOException("link " + n + " (" + parent + ") does not hold the content its child " + childPath
                    + " was made from: its content hash is " + hex(parentHash) + ", the child recorded "
                    + hex(child.parentHash()));
        }
        if (parentSize != child.size()) {
            throw new IOException("link " + n + " (" + parent + ") is an image of " + parentSize + " bytes, but its child "
                    + childPath + " is one of " + child.size());
        }
    }

    private static void requireFile(Path path, int n, Path child) throws IOException {
        if (!Files.isRegularFile(path)) {
            throw new IOException("link " + n + " (" + path + ") is missing" + (child == null ? "" : ": it is the parent of "
                    + child));
        }
    }

    private static Path parentOf(Path link, DiffFile.Header h, int n) throws IOException {
        try {
            Path reference = Path.of(h.parentReference());
            if (reference.isAbsolute()) {
                throw new IOException("link " + n + " (" + link + ") names its parent by an absolute path, which this "
                        + "format never writes: " + h.parentReference());
            }
            return link.getParent().resolve(reference).normalize();
        } catch (InvalidPathException e) {
            throw new IOException("link " + n + " (" + link + ") names its parent by an invalid path", e);
        }
    }

    private static boolean sniff(Path path) throws IOException {
        if (!Files.isRegularFile(path)) {
            return false;
        }
        try (FileChannel ch = FileChannel.open(path)) {
            return DiffFile.looksLikeDiff(ch);
        }
    }

    static String hex(byte[] hash) {
        return HexFormat.of().formatHex(hash);
    }
}
