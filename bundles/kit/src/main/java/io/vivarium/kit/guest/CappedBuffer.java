package io.vivarium.kit.guest;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;

/** Keeps the first {@code cap} bytes written to it and remembers whether more came. */
final class CappedBuffer extends OutputStream {
    private final int cap;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private boolean truncated;

    CappedBuffer(int cap) {
        this.cap = cap;
    }

    @Override
    public void write(int b) {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] bytes, int offset, int length) {
        int room = cap - kept.size();
        if (length > room) {
            truncated = true;
        }
        kept.write(bytes, offset, Math.min(length, room));
    }

    void markTruncated(boolean more) {
        truncated |= more;
    }

    boolean truncated() {
        return truncated;
    }

    byte[] bytes() {
        return kept.toByteArray();
    }
}
