package io.vivarium.storage.diffchain.internal;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The on-disk format of a diff link, version 1: the 4 KiB pages of a memory image that differ from
 * its parent's content, the page index, and the hashes that tie it to its parent. Everything in a
 * file is untrusted (a crash, a tamper, a full disk): {@link #read} checks every size and offset
 * against the file's length before anything is used, and {@link #readIndex} every page number
 * against the image's size.
 *
 * <pre>
 * header block, 4096 bytes, integers big-endian
 *    0   8  magic "VIVDIFF\n"
 *    8   4  format version (1)
 *   12   4  page size (4096)
 *   16   8  logical size: bytes of the image this link stands for (a multiple of the page size)
 *   24   8  n: pages stored
 *   32   4  depth: links to the root (1 when the parent is a plain file)
 *   36   1  parent kind: 0 a plain file, 1 a diff link
 *   37   1  0
 *   38   2  L: bytes of the parent reference (1 to 2048)
 *   40  32  content hash: SHA-256 of the logical content this link stands for
 *   72  32  parent content hash: SHA-256 of the parent's logical content
 *  104  32  body hash: SHA-256 of the page region followed by the index
 *  136   L  parent reference: the parent's path relative to this file's folder, UTF-8
 *  ...      zeros
 * 4064  32  header hash: SHA-256 of bytes 0 to 4063
 * 4096      page region: n pages of 4096 bytes, in index order
 * 4096+4096n  index: n page numbers (8 bytes each), strictly ascending, each below size / 4096
 * the file ends there: its length is exactly 4096 + 4104n
 * </pre>
 * Pages sit at 4 KiB offsets so that they can be copied with whole-block I/O.
 */
final class DiffFile {

    static final int PAGE = 4096;
    static final int VERSION = 1;
    static final int HEADER = 4096;
    static final int HASH = 32;
    static final int MAX_REFERENCE = 2048;
    /** Memory images up to 1 TiB: sizes and offsets past it are refused before any arithmetic on them. */
    static final long MAX_SIZE = 1L << 40;
    static final int MAX_DEPTH = 1024;

    static final byte PARENT_FILE = 0;
    static final byte PARENT_DIFF = 1;

    private static final byte[] MAGIC = "VIVDIFF\n".getBytes(StandardCharsets.US_ASCII);
    private static final int HEADER_HASH_AT = HEADER - HASH;

    /** A link's header, as written or as read and checked. */
    record Header(long size, long pages, int depth, byte parentKind, String parentReference, byte[] contentHash,
            byte[] parentHash, byte[] bodyHash) {

        long indexOffset() {
            return HEADER + pages * PAGE;
        }

        long fileLength() {
            return indexOffset() + pages * Long.BYTES;
        }

        /** Where the {@code slot}-th stored page is in the file. */
        static long pageOffset(long slot) {
            return HEADER + slot * PAGE;
        }

        boolean parentIsDiff() {
            return parentKind == PARENT_DIFF;
        }

        ByteBuffer encode() {
            byte[] reference = parentReference.getBytes(StandardCharsets.UTF_8);
            ByteBuffer b = ByteBuffer.allocate(HEADER);
            b.put(MAGIC).putInt(VERSION).putInt(PAGE).putLong(size).putLong(pages).putInt(depth).put(parentKind)
                    .put((byte) 0).putShort((short) reference.length).put(contentHash).put(parentHash).put(bodyHash)
                    .put(reference);
            b.put(HEADER_HASH_AT, sha256().digest(Arrays.copyOf(b.array(), HEADER_HASH_AT)));
            return b.rewind();
        }
    }

    private DiffFile() {
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }

    /** Whether the file starts like a diff link (for artifacts handed over without their mode). */
    static boolean looksLikeDiff(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(MAGIC.length);
        if (ch.size() < HEADER) {
            return false;
        }
        readFully(ch, b, 0);
        return Arrays.equals(b.array(), MAGIC);
    }

    /** Reads and checks the header of the diff link {@code path} open as {@code ch}; throws saying what is wrong. */
    static Header read(FileChannel ch, Path path) throws IOException {
        long length = ch.size();
        if (length < HEADER) {
            throw new IOException(path + " is truncated: " + length + " bytes, shorter than the " + HEADER
                    + "-byte header of a diff link");
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER);
        readFully(ch, b, 0);
        byte[] raw = b.array();
        if (!Arrays.equals(raw, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new IOException(path + " is not a diff link (no VIVDIFF magic)");
        }
        int version = b.getInt(8);
        if (version != VERSION) {
            throw new IOException(path + " is a diff link of format version " + version + "; this storage-diffchain "
                    + "reads version " + VERSION);
        }
        byte[] headerHash = Arrays.copyOfRange(raw, HEADER_HASH_AT, HEADER);
        if (!MessageDigest.isEqual(headerHash, sha256().digest(Arrays.copyOf(raw, HEADER_HASH_AT)))) {
            throw new IOException(path + " has a damaged header (its hash does not match)");
        }
        int page = b.getInt(12);
        long size = b.getLong(16);
        long pages = b.getLong(24);
        int depth = b.getInt(32);
        byte parentKind = b.get(36);
        int referenceLength = Short.toUnsignedInt(b.getShort(38));
        if (page != PAGE) {
            throw new IOException(path + " has pages of " + page + " bytes; only " + PAGE + " is supported");
        }
        if (size < 0 || size > MAX_SIZE || size % PAGE != 0) {
            throw new IOException(path + " claims an image of " + size + " bytes: not a whole number of pages up to "
                    + MAX_SIZE);
        }
        if (pages < 0 || pages > size / PAGE) {
            throw new IOException(path + " claims " + pages + " pages of an image of " + size / PAGE);
        }
        if (depth < 1 || depth > MAX_DEPTH) {
            throw new IOException(path + " claims depth " + depth + " (1 to " + MAX_DEPTH + ")");
        }
        if (parentKind != PARENT_FILE && parentKind != PARENT_DIFF) {
            throw new IOException(path + " names a parent of unknown kind " + parentKind);
        }
        if (referenceLength < 1 || referenceLength > MAX_REFERENCE) {
            throw new IOException(path + " has a parent reference of " + referenceLength + " bytes (1 to "
                    + MAX_REFERENCE + ")");
        }
        String reference = new String(raw, 136, referenceLength, StandardCharsets.UTF_8);
        Header h = new Header(size, pages, depth, parentKind, reference, Arrays.copyOfRange(raw, 40, 72),
                Arrays.copyOfRange(raw, 72, 104), Arrays.copyOfRange(raw, 104, 136));
        if (length != h.fileLength()) {
            throw new IOException(path + " is " + length + " bytes, but its header describes " + h.fileLength()
                    + " (" + pages + " pages and their index): truncated or extended");
        }
        return h;
    }

    /** The page index, checked: strictly ascending, each page inside the image. */
    static long[] readIndex(FileChannel ch, Header h, Path path) throws IOException {
        if (h.pages() > Integer.MAX_VALUE / Long.BYTES) {
            throw new IOException(path + " holds more pages than this reader indexes at once (" + h.pages() + ")");
        }
        ByteBuffer b = ByteBuffer.allocate((int) h.pages() * Long.BYTES);
        readFully(ch, b, h.indexOffset());
        b.flip();
        long[] index = new long[(int) h.pages()];
        long limit = h.size() / PAGE;
        for (int i = 0; i < index.length; i++) {
            index[i] = b.getLong();
            if (index[i] < 0 || index[i] >= limit) {
                throw new IOException(path + ": page index entry " + i + " is page " + index[i]
                        + ", outside the image's " + limit + " pages");
            }
            if (i > 0 && index[i] <= index[i - 1]) {
                throw new IOException(path + ": page index entry " + i + " (page " + index[i]
                        + ") does not follow entry " + (i - 1) + " (page " + index[i - 1] + ")");
            }
        }
        return index;
    }

    /** SHA-256 of the page region followed by the index, read from the file. */
    static byte[] bodyHash(FileChannel ch, Header h) throws IOException {
        MessageDigest digest = sha256();
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
        long end = h.fileLength();
        for (long at = HEADER; at < end; ) {
            buf.clear().limit((int) Math.min(buf.capacity(), end - at));
            readFully(ch, buf, at);
            at += buf.flip().remaining();
            digest.update(buf);
        }
        return digest.digest();
    }

    /** Reads exactly {@code b.remaining()} bytes at {@code position}; a file that ends first is truncated. */
    static void readFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long at = position;
        while (b.hasRemaining()) {
            int n = ch.read(b, at);
            if (n < 0) {
                throw new EOFException("the file ends at " + at + ", before the " + b.remaining() + " bytes expected there");
            }
            at += n;
        }
    }

    static void writeFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long at = position;
        while (b.hasRemaining()) {
            at += ch.write(b, at);
        }
    }
}
