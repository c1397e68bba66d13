package io.vivarium.core.internal;

import java.time.Duration;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.spi.GuestProcess;

/**
 * One background command: its log, and its state as its pump ({@link BackgroundCommands}) reads
 * it from the guest. The pump is the only writer; readers wait on this object.
 */
final class BackgroundCommand {
    /** How long one read of the guest waits for output before it asks again. */
    static final Duration READ_WAIT = Duration.ofSeconds(10);

    final String id;
    final String sandboxId;
    private final List<String> args;
    private final long startedAtUnix;
    private final long startedNanos = System.nanoTime();
    final CommandLog log = new CommandLog();
    /** Held while writing to its stdin, so that writes reach it in the order they came. */
    private final Object writing = new Object();

    private GuestProcess process;
    private RuntimeException failedToStart;
    private String status = CommandInfo.RUNNING;
    private Integer exitCode;
    private boolean timedOut;
    private boolean truncated;
    private long durationMs = -1;
    private String error;

    /** Whether its stdin is open for {@link #write}: started so, and no eof written yet. */
    private boolean stdinOpen;
    private final boolean terminal;

    BackgroundCommand(String id, String sandboxId, List<String> args, boolean stdinOpen, boolean terminal) {
        this.stdinOpen = stdinOpen;
        this.terminal = terminal;
        this.id = id;
        this.sandboxId = sandboxId;
        this.args = List.copyOf(args);
        this.startedAtUnix = System.currentTimeMillis() / 1000;
    }

    /** Reads the process until it ends, into the log. */
    void pump(GuestProcess started) {
        synchronized (this) {
            process = started;
            notifyAll();
        }
        GuestProcess.Output out;
        do {
            out = started.read(READ_WAIT);
            log.append(CommandOutput.Chunk.STDOUT, out.stdout());
            log.append(CommandOutput.Chunk.STDERR, out.stderr());
            synchronized (this) {
                truncated = out.truncated();
            }
        } while (!out.exited());
        ended(CommandInfo.EXITED, out.exitCode(), out.timedOut(), out.durationMs(), null);
    }

    /** The start failed ({@code process} never came) or the guest stopped answering while it ran. */
    void failed(RuntimeException e) {
        synchronized (this) {
            if (process == null) {
                failedToStart = e;
                status = CommandInfo.LOST;
                notifyAll();
                return;
            }
        }
        ended(CommandInfo.LOST, null, false, elapsedMs(), e.getMessage());
    }

    private void ended(String how, Integer code, boolean timedOut, long durationMs, String error) {
        synchronized (this) {
            status = how;
            exitCode = code;
            this.timedOut = timedOut;
            this.durationMs = durationMs;
            this.error = error;
            notifyAll();
        }
        log.close();
    }

    /** Waits until the process runs; throws what its start threw. */
    synchronized void awaitStart(Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        for (long left = patience.toNanos(); process == null && failedToStart == null; left = deadline - System.nanoTime()) {
            if (left <= 0) {
                throw ApiException.unavailable("command " + id + " did not start within " + patience.toSeconds() + " s", 5);
            }
            wait(Math.max(1, left / 1_000_000));
        }
        if (failedToStart != null) {
            throw failedToStart;
        }
    }

    synchronized boolean started() {
        return process != null || failedToStart != null;
    }

    void signal(int signal) {
        running("there is nothing to signal").signal(signal);
    }

    void resize(TerminalSize size) {
        if (!terminal) {
            throw ApiException.conflict("command " + id + " runs without a terminal; start one with ?tty=true to resize it");
        }
        running("its terminal is gone").resize(size);
    }

    /** The process while the command runs; 409 saying {@code otherwise} once it has ended. */
    private synchronized GuestProcess running(String otherwise) {
        if (!CommandInfo.RUNNING.equals(status)) {
            throw ApiException.conflict("command " + id + " has ended (" + status + "); " + otherwise);
        }
        return process;
    }

    /** Writes to its stdin, one writer at a time (in order); 409 when its stdin is closed or it has ended. */
    void write(byte[] data, boolean eof) {
        GuestProcess running;
        synchronized (this) {
            if (!CommandInfo.RUNNING.equals(status)) {
                throw ApiException.conflict("command " + id + " has ended (" + status + "); its stdin is closed");
            }
            if (!stdinOpen) {
                throw ApiException.conflict("the stdin of command " + id + " is closed: start a command with ?stdin=open "
                        + "to write to it, and write before sending eof");
            }
            running = process;
            if (eof) {
                stdinOpen = false;
            }
        }
        synchronized (writing) {
            try {
                running.write(data, eof);
            } catch (ApiException e) {
                if (e.status() == 400) { // the agent found it closed: the command closed its end
                    throw ApiException.conflict("the stdin of command " + id + " is closed: " + e.getMessage());
                }
                throw e;
            }
        }
    }

    /** This command once ended, or as it is after {@code wait}. */
    synchronized CommandInfo await(Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        for (long left = wait.toNanos(); CommandInfo.RUNNING.equals(status) && left > 0; left = deadline - System.nanoTime()) {
            wait(Math.max(1, left / 1_000_000));
        }
        return info();
    }

    synchronized CommandInfo info() {
        return new CommandInfo(id, sandboxId, args, status, exitCode, timedOut, truncated, log.size(), startedAtUnix,
                durationMs >= 0 ? durationMs : elapsedMs(), error, terminal);
    }

    synchronized boolean running() {
        return CommandInfo.RUNNING.equals(status);
    }

    private long elapsedMs() {
        return (System.nanoTime() - startedNanos) / 1_000_000;
    }
}
