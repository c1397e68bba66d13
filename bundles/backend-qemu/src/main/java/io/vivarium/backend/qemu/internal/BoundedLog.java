package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Keeps a log that QEMU appends to ({@code O_APPEND}: the console with {@code append=on}, the
 * {@code -D} log) from growing without bound: past {@code max} bytes it is cut to its last
 * {@code keep} bytes, from the start of a line. QEMU keeps its file open, so the file is cut in
 * place (truncate, then the kept tail written back); what QEMU writes in between, a few
 * microseconds, can be lost or land before the tail.
 */
record BoundedLog(long max, int keep) {

    BoundedLog {
        if (keep <= 0 || keep > max) {
            throw new IllegalArgumentException("keep must be in 1.." + max + ", not " + keep);
        }
    }

    /** Cuts {@code log} if it is over {@code max}; true if it did. A missing file is left alone. */
    boolean cap(Path log) throws IOException {
        ByteBuffer tail = ByteBuffer.allocate(keep);
        try (FileChannel file = FileChannel.open(log, StandardOpenOption.READ)) {
            long size = file.size();
            if (size <= max) {
                return false;
            }
            long at = size - keep;
            while (tail.hasRemaining() && file.read(tail, at + tail.position()) >= 0) {
                // until the buffer is full
            }
        } catch (NoSuchFileException e) {
            return false;
        }
        tail.flip();
        int line = 0;
        while (line < tail.limit() && tail.get(line) != '\n') {
            line++;
        }
        tail.position(line < tail.limit() ? line + 1 : 0);
        // appending, as QEMU does, so that neither writes over the other
        try (FileChannel file = FileChannel.open(log, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            file.truncate(0);
            while (tail.hasRemaining()) {
                file.write(tail);
            }
        }
        return true;
    }
}
