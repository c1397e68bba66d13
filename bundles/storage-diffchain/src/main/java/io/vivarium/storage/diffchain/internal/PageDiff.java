package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.security.MessageDigest;
import java.util.Arrays;

import io.vivarium.api.spi.OperationContext;

/**
 * Writes a diff link in one pass over its source: each 4 KiB page of the source is compared with
 * the parent chain's content at the same offset; pages that differ go to the page region (adjacent
 * ones in one write), their numbers to the index; the source's content hash, the body hash and the
 * header are written last. What is hashed is exactly what was read and stored.
 */
final class PageDiff {

    private static final int CHUNK = OpenChain.RUN;
    private static final long CHECK_EVERY = 64L << 20;

    private PageDiff() {
    }

    /**
     * @param parentReference the parent's path relative to the folder of {@code out}'s target
     * @return the header written
     */
    static DiffFile.Header write(FileChannel source, OpenChain parent, Chain parentChain, String parentReference,
            FileChannel out, OperationContext context) throws IOException {
        long size = parentChain.size();
        byte[] src = new byte[CHUNK];
        byte[] par = new byte[CHUNK];
        MessageDigest content = DiffFile.sha256();
        MessageDigest body = DiffFile.sha256();
        long[] index = new long[1024];
        int pages = 0;
        for (long at = 0; at < size; at += CHUNK) {
            if (at > 0 && at % CHECK_EVERY == 0) {
                context.checkpoint("comparing pages at " + (at >> 20) + " MiB");
            }
            int length = (int) Math.min(CHUNK, size - at);
            DiffFile.readFully(source, ByteBuffer.wrap(src, 0, length), at);
            parent.read(at, par, length);
            content.update(src, 0, length);
            int run = -1;
            for (int off = 0; off <= length; off += DiffFile.PAGE) {
                boolean differs = off < length
                        && Arrays.mismatch(src, off, off + DiffFile.PAGE, par, off, off + DiffFile.PAGE) >= 0;
                if (differs) {
                    if (pages == index.length) {
                        index = Arrays.copyOf(index, index.length * 2);
                    }
                    index[pages++] = (at + off) / DiffFile.PAGE;
                    if (run < 0) {
                        run = off;
                    }
                } else if (run >= 0) {
                    int runPages = (off - run) / DiffFile.PAGE;
                    DiffFile.writeFully(out, ByteBuffer.wrap(src, run, off - run),
                            DiffFile.Header.pageOffset(pages - runPages));
                    body.update(src, run, off - run);
                    run = -1;
                }
            }
        }
        ByteBuffer indexBytes = ByteBuffer.allocate(pages * Long.BYTES);
        for (int i = 0; i < pages; i++) {
            indexBytes.putLong(index[i]);
        }
        body.update(indexBytes.array());
        DiffFile.writeFully(out, indexBytes.flip(), DiffFile.Header.pageOffset(pages));
        DiffFile.Header header = new DiffFile.Header(size, pages, parentChain.depth() + 1,
                parentChain.depth() == 0 ? DiffFile.PARENT_FILE : DiffFile.PARENT_DIFF, parentReference,
                content.digest(), parentChain.contentHash(), body.digest());
        DiffFile.writeFully(out, header.encode(), 0);
        return header;
    }
}
