package io.vivarium.fleet.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * How a file of an image crosses the wire between nodes: only its blocks of {@value #BLOCK} bytes
 * that are not all zeros, each as a frame of its offset (8 bytes), its length (4 bytes) and its
 * bytes. A workspace image is a mostly empty file system in a sparse file of the sandbox's disk
 * limit: its holes are neither sent nor, on the node that receives it, written.
 */
final class SparseFrames {
    static final String CONTENT_TYPE = "application/vnd.vivarium.sparse-frames";
    static final int BLOCK = 64 << 10;
    private static final byte[] ZEROS = new byte[BLOCK];

    private SparseFrames() {
    }

    /** Writes the frames of {@code in}'s bytes to {@code out}. */
    static void encode(InputStream in, OutputStream out) throws IOException {
        DataOutputStream frames = new DataOutputStream(out);
        byte[] block = new byte[BLOCK];
        long offset = 0;
        for (int n; (n = in.readNBytes(block, 0, BLOCK)) > 0; offset += n) {
            if (Arrays.mismatch(block, 0, n, ZEROS, 0, n) >= 0) {
                frames.writeLong(offset);
                frames.writeInt(n);
                frames.write(block, 0, n);
            }
        }
        frames.flush();
    }

    /** The {@code size} bytes the frames of {@code framed} stand for, zeros between them; an {@link IOException} for frames out of order or beyond the size. */
    static InputStream decode(InputStream framed, long size) {
        return new Decoder(new DataInputStream(framed), size);
    }

    private static final class Decoder extends InputStream {
        private final DataInputStream frames;
        private final long size;
        private long position;
        /** Where the zeros before the next frame's bytes end ({@code size} after the last frame). */
        private long gapEnd;
        /** The length of the frame whose bytes start at {@link #gapEnd}, 0 for none. */
        private int pending;
        /** What is left of the frame being read. */
        private int dataLeft;

        Decoder(DataInputStream frames, long size) {
            this.frames = frames;
            this.size = size;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            while (dataLeft == 0 && position == gapEnd && position < size) {
                if (pending > 0) {
                    dataLeft = pending;
                    pending = 0;
                } else {
                    nextFrame();
                }
            }
            if (position >= size) {
                return -1;
            }
            if (dataLeft > 0) {
                int n = frames.read(b, off, Math.min(len, dataLeft));
                if (n < 0) {
                    throw new EOFException("the holder's frame ended early, at byte " + position);
                }
                dataLeft -= n;
                position += n;
                gapEnd = Math.max(gapEnd, position);
                return n;
            }
            int n = (int) Math.min(len, gapEnd - position);
            Arrays.fill(b, off, off + n, (byte) 0);
            position += n;
            return n;
        }

        private void nextFrame() throws IOException {
            long offset;
            try {
                offset = frames.readLong();
            } catch (EOFException end) {
                gapEnd = size;
                return;
            }
            int length = frames.readInt();
            if (offset < position || length <= 0 || length > BLOCK || offset + length > size) {
                throw new IOException("the holder sent a frame of " + length + " bytes at " + offset + ", which does not fit "
                        + "after byte " + position + " of " + size);
            }
            gapEnd = offset;
            pending = length;
        }
    }
}
