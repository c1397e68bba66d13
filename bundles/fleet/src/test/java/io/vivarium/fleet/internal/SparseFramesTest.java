package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** Files cross the wire as frames of their blocks that are not zeros, and read back as the same bytes. */
class SparseFramesTest {

    private static byte[] framed(byte[] file) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        SparseFrames.encode(new ByteArrayInputStream(file), out);
        return out.toByteArray();
    }

    private static byte[] decoded(byte[] frames, long size) throws IOException {
        return SparseFrames.decode(new ByteArrayInputStream(frames), size).readAllBytes();
    }

    @Test
    void aFileWithHolesIsSentWithoutThemAndReadBackWhole() throws IOException {
        Random random = new Random(7);
        int block = SparseFrames.BLOCK;
        for (int size : new int[] {0, 1, block - 1, block, block + 1, 5 * block + 123}) {
            byte[] file = new byte[size];
            for (int b = 0; b * block < size; b += 2) { // every other block has data, the rest are holes
                int from = b * block;
                byte[] data = new byte[Math.min(block, size - from)];
                random.nextBytes(data);
                System.arraycopy(data, 0, file, from, data.length);
            }
            byte[] frames = framed(file);
            assertArrayEquals(file, decoded(frames, size), "size " + size);
            int dataBlocks = (size + block - 1) / block / 2 + ((size + block - 1) / block) % 2;
            assertEquals(size == 0 ? 0 : (long) dataBlocks * 12 + countNonZeroBytes(file, block), frames.length, "size " + size);
        }
        byte[] empty = new byte[10 * block];
        assertEquals(0, framed(empty).length, "a file of zeros sends nothing");
        assertArrayEquals(empty, decoded(new byte[0], empty.length));
    }

    private static long countNonZeroBytes(byte[] file, int block) {
        long n = 0;
        for (int from = 0; from < file.length; from += block) {
            int len = Math.min(block, file.length - from);
            boolean zero = true;
            for (int i = from; i < from + len && zero; i++) {
                zero = file[i] == 0;
            }
            n += zero ? 0 : len;
        }
        return n;
    }

    @Test
    void framesOutOfOrderBeyondTheSizeOrCutShortAreRefused() throws IOException {
        assertTrue(assertThrows(IOException.class, () -> decoded(frame(0, 10, frame(100, 10, new byte[0])), 1000)).getMessage()
                .contains("does not fit"));
        assertThrows(IOException.class, () -> decoded(frame(995, 10, new byte[0]), 1000));
        assertThrows(IOException.class, () -> decoded(frame(0, SparseFrames.BLOCK + 1, new byte[0]), 1L << 20));
        byte[] cut = frame(0, 10, new byte[0]);
        byte[] shorter = java.util.Arrays.copyOf(cut, cut.length - 3);
        assertThrows(IOException.class, () -> decoded(shorter, 1000));
    }

    /** {@code before} followed by a frame of {@code length} bytes of 1 at {@code offset}. */
    private static byte[] frame(long offset, int length, byte[] before) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(before);
        DataOutputStream d = new DataOutputStream(out);
        d.writeLong(offset);
        d.writeInt(length);
        for (int i = 0; i < length; i++) {
            d.write(1);
        }
        return out.toByteArray();
    }
}
