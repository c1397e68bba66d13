package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * The files of a verified {@link Chain}, open for reading: the content the chain stands for, read
 * at any offset, and the pages of its links written onto a copy of its root.
 */
final class OpenChain implements AutoCloseable {

    /** The most bytes moved in one read or write. */
    static final int RUN = 1 << 20;

    private final Chain chain;
    private final FileChannel base;
    /** The links' files, the top first, as in the chain. */
    private final List<FileChannel> links = new ArrayList<>();

    OpenChain(Chain chain) throws IOException {
        this.chain = chain;
        this.base = FileChannel.open(chain.base().path());
        try {
            for (Chain.Link l : chain.links()) {
                links.add(FileChannel.open(l.path()));
            }
        } catch (IOException e) {
            close();
            throw e;
        }
    }

    /** Reads {@code length} bytes of the chain's content at {@code offset} (a page boundary) into {@code into}. */
    void read(long offset, byte[] into, int length) throws IOException {
        DiffFile.readFully(base, ByteBuffer.wrap(into, 0, length), offset);
        long first = offset / DiffFile.PAGE;
        long end = first + (length + DiffFile.PAGE - 1) / DiffFile.PAGE;
        for (int li = links.size() - 1; li >= 0; li--) {
            long[] index = chain.links().get(li).index();
            int slot = Arrays.binarySearch(index, first);
            for (int s = slot >= 0 ? slot : -slot - 1; s < index.length && index[s] < end; s++) {
                int at = (int) ((index[s] - first) * DiffFile.PAGE);
                DiffFile.readFully(links.get(li), ByteBuffer.wrap(into, at, Math.min(DiffFile.PAGE, length - at)),
                        DiffFile.Header.pageOffset(s));
            }
        }
    }

    /**
     * Writes into {@code out} (a copy of the root) every page the links hold, each once, from the
     * highest link that holds it; adjacent pages of one link go in one write. Returns the bytes written.
     */
    long writePages(FileChannel out) throws IOException {
        BitSet written = new BitSet((int) (chain.size() / DiffFile.PAGE));
        ByteBuffer buf = ByteBuffer.allocateDirect(RUN);
        long bytes = 0;
        for (int li = 0; li < links.size(); li++) {
            long[] index = chain.links().get(li).index();
            FileChannel from = links.get(li);
            int s = 0;
            while (s < index.length) {
                if (written.get((int) index[s])) {
                    s++;
                    continue;
                }
                int e = s + 1;
                while (e < index.length && index[e] == index[e - 1] + 1 && !written.get((int) index[e])
                        && (e - s) * DiffFile.PAGE < RUN) {
                    e++;
                }
                buf.clear().limit((e - s) * DiffFile.PAGE);
                DiffFile.readFully(from, buf, DiffFile.Header.pageOffset(s));
                buf.flip();
                DiffFile.writeFully(out, buf, index[s] * DiffFile.PAGE);
                written.set((int) index[s], (int) index[e - 1] + 1);
                bytes += (long) (e - s) * DiffFile.PAGE;
                s = e;
            }
        }
        return bytes;
    }

    @Override
    public void close() throws IOException {
        IOException failure = null;
        for (FileChannel ch : links) {
            try {
                ch.close();
            } catch (IOException e) {
                failure = e;
            }
        }
        base.close();
        if (failure != null) {
            throw failure;
        }
    }
}
