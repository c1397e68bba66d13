package io.vivarium.core.internal;

import java.time.Duration;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;

/**
 * Which operations may run on one sandbox together: execs (and file transfers) run side by side;
 * an exclusive operation (restore, dry-run, checkpoint, pause, resume, stop, start) runs alone. A
 * second exclusive operation is refused at once (409); an exec arriving during one waits up to the
 * patience, then 409; an exclusive operation waits as long for running execs to end, and execs
 * arriving meanwhile queue behind it. A delete {@linkplain #ending ends} the sandbox: it waits up
 * to the patience for an exclusive operation (then 409), never for execs, which it ends. Independent of the lifecycle lock, so re-adoption during a
 * bundle update never waits for a long operation.
 */
final class OperationGate {
    private final String sandbox;
    /** Guarded by this: the exclusive operation running or waiting for execs to drain, or null. */
    private String exclusive;
    /** The exclusive operation of idle demotion ({@link Tiers}), which others wait for rather than refuse. */
    static final String DEMOTION = "idle demotion";
    private int execs;

    OperationGate(String sandbox) {
        this.sandbox = sandbox;
    }

    /** Enters as an exec; {@link #exitShared()} in a finally. */
    synchronized void enterShared(Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        while (exclusive != null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw ApiException.conflict("sandbox " + sandbox + " is busy with a " + exclusive
                        + "; retry when it is done");
            }
            awaitNanos(left);
        }
        execs++;
    }

    synchronized void exitShared() {
        execs--;
        notifyAll();
    }

    /** Enters as the exclusive operation {@code what}; {@link #exitExclusive()} in a finally. */
    synchronized void enterExclusive(String what, Duration patience) {
        long demotionDeadline = System.nanoTime() + patience.toNanos();
        while (DEMOTION.equals(exclusive) && !DEMOTION.equals(what)) {
            // an idle demotion is brief and no caller's doing: wait for it rather than refuse
            long left = demotionDeadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            awaitNanos(left);
        }
        if (exclusive != null) {
            throw ApiException.conflict("a " + exclusive + " is already running on sandbox " + sandbox
                    + "; wait for it to finish");
        }
        exclusive = what;
        long deadline = System.nanoTime() + patience.toNanos();
        while (execs > 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                int running = execs;
                exclusive = null;
                notifyAll();
                throw ApiException.conflict(running + " exec(s) still running on sandbox " + sandbox
                        + " after " + patience.toMillis() + " ms; retry the " + what + " when they end");
            }
            awaitNanos(left);
        }
    }

    /** Enters as {@code what}, which ends the sandbox (a delete); {@link #exitExclusive()} in a finally. */
    synchronized void enterEnding(String what, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        while (exclusive != null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw ApiException.conflict("sandbox " + sandbox + " is busy with a " + exclusive + " after "
                        + patience.toMillis() + " ms; retry the " + what + " when it is done");
            }
            awaitNanos(left);
        }
        exclusive = what;
    }

    synchronized void exitExclusive() {
        exclusive = null;
        notifyAll();
    }

    /** Runs {@code call} as an exec. */
    <T> T shared(Duration patience, Supplier<T> call) {
        enterShared(patience);
        try {
            return call.get();
        } finally {
            exitShared();
        }
    }

    /** Runs {@code call} as the exclusive operation {@code what}. */
    <T> T exclusive(String what, Duration patience, Supplier<T> call) {
        enterExclusive(what, patience);
        try {
            return call.get();
        } finally {
            exitExclusive();
        }
    }

    /** Runs {@code call} as {@code what}, which ends the sandbox: see {@link #enterEnding}. */
    <T> T ending(String what, Duration patience, Supplier<T> call) {
        enterEnding(what, patience);
        try {
            return call.get();
        } finally {
            exitExclusive();
        }
    }

    private void awaitNanos(long nanos) {
        try {
            wait(Math.max(1, nanos / 1_000_000), 0);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted while waiting for sandbox " + sandbox, 1, ie);
        }
    }
}
