package io.vivarium.core.internal;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * Reads a stream ahead of its consumer on a thread of its own, in chunks, so that the source (a
 * network transfer, decrypted on this thread) and the consumer's work (hashing and writing)
 * overlap instead of taking turns. At most {@value #AHEAD} chunks wait;
 * the reader stops when the stream ends, fails, or the consumer closes this.
 */
final class ReadAhead implements AutoCloseable {
    static final int AHEAD = 4;

    /** A chunk read, the end (an empty one), or the failure that ended the stream. */
    private record Chunk(byte[] bytes, int length, IOException failure) {
    }

    private final BlockingQueue<Chunk> ready = new ArrayBlockingQueue<>(AHEAD);
    private final BlockingQueue<byte[]> free = new ArrayBlockingQueue<>(AHEAD + 1);
    private final Thread reader;
    /** The end or failure once the consumer met it: every later call gives it again. */
    private Chunk last;

    ReadAhead(InputStream in, int chunk) {
        for (int i = 0; i <= AHEAD; i++) {
            free.add(new byte[chunk]);
        }
        reader = Thread.ofPlatform().name("vivarium-read-ahead").daemon().start(() -> {
            try {
                while (true) {
                    byte[] bytes = free.take();
                    int n = in.readNBytes(bytes, 0, bytes.length);
                    ready.put(new Chunk(bytes, n, null));
                    if (n == 0) {
                        return;
                    }
                }
            } catch (InterruptedException e) {
                // closed by the consumer
            } catch (IOException e) {
                ready.offer(new Chunk(null, 0, e));
            } catch (RuntimeException | Error e) {
                ready.offer(new Chunk(null, 0, new IOException("reading failed: " + e, e)));
            }
        });
    }

    /** Copies the next chunk into {@code into} (at least as long as a chunk) and returns its length, 0 at the end. */
    int next(byte[] into) throws IOException {
        Chunk c = last;
        if (c == null) {
            try {
                c = ready.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while reading", e);
            }
        }
        if (c.failure() != null || c.length() == 0) {
            last = c;
        }
        if (c.failure() != null) {
            throw c.failure();
        }
        if (c.length() > 0) {
            System.arraycopy(c.bytes(), 0, into, 0, c.length());
            free.add(c.bytes());
        }
        return c.length();
    }

    @Override
    public void close() {
        reader.interrupt();
    }
}
