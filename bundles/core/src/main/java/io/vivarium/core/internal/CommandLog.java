package io.vivarium.core.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CommandOutput.Chunk;

/**
 * A background command's output, stdout and stderr in the order the agent returned them, each
 * chunk at its byte offset in the one log, so a reader resumes at any offset with nothing lost or
 * repeated. Its size is bounded by the command's output cap (per stream), which the agent enforces.
 */
final class CommandLog {
    private final List<Chunk> chunks = new ArrayList<>();
    private long size;
    private boolean closed;

    synchronized void append(String stream, byte[] data) {
        if (data.length > 0) {
            chunks.add(new Chunk(stream, size, data));
            size += data.length;
            notifyAll();
        }
    }

    /** No more output will come: readers waiting for some return. */
    synchronized void close() {
        closed = true;
        notifyAll();
    }

    synchronized long size() {
        return size;
    }

    /**
     * The chunks from {@code offset} on (the first cut to start there), waiting up to {@code wait}
     * while there are none and the log is open; 400 for an offset past the end.
     */
    synchronized List<Chunk> from(long offset, Duration wait) throws InterruptedException {
        if (offset < 0 || offset > size) {
            throw ApiException.badRequest("offset " + offset + " is not in the command's output, which has " + size
                    + " bytes so far");
        }
        long deadline = System.nanoTime() + wait.toNanos();
        for (long left = wait.toNanos(); offset == size && !closed && left > 0; left = deadline - System.nanoTime()) {
            wait(Math.max(1, left / 1_000_000));
        }
        List<Chunk> read = new ArrayList<>();
        for (int i = first(offset); i < chunks.size(); i++) {
            Chunk c = chunks.get(i);
            read.add(c.offset() >= offset ? c
                    : new Chunk(c.stream(), offset, Arrays.copyOfRange(c.data(), (int) (offset - c.offset()), c.data().length)));
        }
        return read;
    }

    /** The index of the chunk holding byte {@code offset} (the chunk count at the end). */
    private int first(long offset) {
        int low = 0;
        int high = chunks.size();
        while (low < high) {
            int mid = (low + high) >>> 1;
            Chunk c = chunks.get(mid);
            if (c.offset() + c.data().length <= offset) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        return low;
    }
}
