package io.vivarium.http.internal;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hc.core5.concurrent.Cancellable;

/**
 * The requests passed on whose upstream has not begun its answer yet, each with when it gives up:
 * a sweep every {@code every} cancels those past it. A timer task per request, scheduled and then
 * cancelled once the answer began, woke the timer's thread for each: 11 % of the daemon's CPU for
 * a request through an exposed port (async-profiler); a registration here is a map entry.
 */
final class AnswerDeadlines implements AutoCloseable {
    private record Waiting(long giveUpAt, AtomicBoolean late) {
    }

    private final Map<Cancellable, Waiting> waiting = new ConcurrentHashMap<>();
    private final ScheduledExecutorService sweeper;

    AnswerDeadlines(Duration every) {
        sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vivarium-upstream-answers");
            t.setDaemon(true);
            return t;
        });
        sweeper.scheduleWithFixedDelay(this::sweep, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** {@code request} waits for its answer at most {@code within}; the flag says, once it failed, whether a sweep cancelled it. */
    AtomicBoolean await(Cancellable request, Duration within) {
        AtomicBoolean late = new AtomicBoolean();
        waiting.put(request, new Waiting(System.nanoTime() + within.toNanos(), late));
        return late;
    }

    /** {@code request}'s answer began, or it failed: it is no longer waited for. */
    void done(Cancellable request) {
        waiting.remove(request);
    }

    /** Cancels the requests past their time. */
    void sweep() {
        long now = System.nanoTime();
        waiting.forEach((request, w) -> {
            if (now - w.giveUpAt() >= 0 && waiting.remove(request, w)) {
                w.late().set(true);
                request.cancel();
            }
        });
    }

    @Override
    public void close() {
        sweeper.shutdownNow();
    }
}
