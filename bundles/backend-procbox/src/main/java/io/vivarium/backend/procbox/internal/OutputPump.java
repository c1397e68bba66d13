package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;

/** Drains a process's output stream into a {@link CappedOutput} on its own thread until EOF. */
final class OutputPump {

    private final CappedOutput output;
    private final Thread thread;

    private OutputPump(InputStream in, int cap, String name) {
        this.output = new CappedOutput(cap);
        this.thread = Thread.ofPlatform().daemon().name(name).start(() -> drain(in));
    }

    static OutputPump start(InputStream in, int cap, String name) {
        return new OutputPump(in, cap, name);
    }

    private void drain(InputStream in) {
        byte[] buffer = new byte[16 * 1024];
        try (in) {
            int n;
            while ((n = in.read(buffer)) != -1) {
                output.write(buffer, 0, n);
            }
        } catch (IOException e) {
            // the stream was closed under us: there is nothing more to capture
        }
    }

    /** Waits until EOF or the deadline ({@link System#nanoTime()}); true at EOF. */
    boolean awaitEof(long deadlineNanos) throws InterruptedException {
        long left = deadlineNanos - System.nanoTime();
        return left > 0 ? thread.join(Duration.ofNanos(left)) : !thread.isAlive();
    }

    /**
     * Returns what was captured. If the stream is still open (a background process inherited it),
     * the thread keeps draining and discarding until that process closes it or exits.
     */
    byte[] finish() {
        return output.close();
    }

    boolean truncated() {
        return output.truncated();
    }
}
