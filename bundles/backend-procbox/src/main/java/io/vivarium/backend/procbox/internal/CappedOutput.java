package io.vivarium.backend.procbox.internal;

import java.io.ByteArrayOutputStream;

/**
 * Keeps the first {@code cap} bytes written to it and counts the rest as truncated. Once
 * closed it discards everything, so a reader that outlives the exec stays harmless. Thread-safe.
 */
final class CappedOutput {

    private final int cap;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private boolean truncated;
    private boolean closed;

    CappedOutput(int cap) {
        this.cap = cap;
    }

    synchronized void write(byte[] bytes, int offset, int length) {
        if (closed) {
            return;
        }
        int room = cap - kept.size();
        int taken = Math.min(room, length);
        kept.write(bytes, offset, taken);
        if (taken < length) {
            truncated = true;
        }
    }

    /** Stops capturing and returns what was kept. */
    synchronized byte[] close() {
        closed = true;
        return kept.toByteArray();
    }

    synchronized boolean truncated() {
        return truncated;
    }
}
