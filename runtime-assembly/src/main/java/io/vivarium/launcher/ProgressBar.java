package io.vivarium.launcher;

import java.io.PrintStream;

import io.vivarium.api.Progress;

/**
 * A long call's progress on stderr (a fork of many children, a snapshot build): one line redrawn in
 * place on a terminal, a line per step otherwise (a log keeps each). Steps told out of order (a
 * fork's children finish side by side) never move it back.
 */
final class ProgressBar implements Progress, AutoCloseable {
    private static final int WIDTH = 30;

    private final PrintStream err;
    private final boolean terminal;
    private int shown = -1;
    /** Whether the line last drawn in place still waits for its end (the call failed, or ended early). */
    private boolean lineOpen;

    ProgressBar(PrintStream err, boolean terminal) {
        this.err = err;
        this.terminal = terminal;
    }

    @Override
    public synchronized void step(String what, int done, int of) {
        if (done <= shown) {
            return;
        }
        shown = done;
        int filled = of <= 0 ? WIDTH : Math.min(WIDTH, WIDTH * done / of);
        String line = "[" + "#".repeat(filled) + " ".repeat(WIDTH - filled) + "] " + done + "/" + of + " " + what;
        if (terminal) {
            lineOpen = done < of;
            err.print("\r" + line + (lineOpen ? "" : "\n"));
        } else {
            err.println(line);
        }
        err.flush();
    }

    /** Ends a line left open on a terminal, so that what comes next (an error) starts a line of its own. */
    @Override
    public synchronized void close() {
        if (lineOpen) {
            err.println();
            lineOpen = false;
        }
    }
}
