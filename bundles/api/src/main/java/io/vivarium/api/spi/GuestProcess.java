package io.vivarium.api.spi;

import java.time.Duration;

import io.vivarium.api.TerminalSize;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A command started in an instance ({@link GuestChannel#start}) whose output is read as it is
 * written, under the same timeout and output cap as an exec. One reader at a time. Since 2.4.
 */
@ConsumerType
public interface GuestProcess {

    /**
     * What the command wrote since the last read, waiting up to {@code wait} for it to write
     * something or end. Once a result says {@link Output#exited()} the command is gone and is not
     * read again. Throws {@link io.vivarium.api.ApiException} 502/503 if the instance does not answer.
     */
    Output read(Duration wait);

    /** Sends {@code signal} to the command's process group (a command that already ended is left alone). */
    void signal(int signal);

    /**
     * Writes {@code data} to the stdin of a command started with its stdin open
     * ({@link GuestChannel#start(io.vivarium.api.ExecRequest, boolean)}); {@code eof} closes it
     * after. 409 when its stdin is closed; 501 by default. Since 2.5.
     */
    default void write(byte[] data, boolean eof) {
        throw io.vivarium.api.ApiException.notImplemented("this backend cannot write to a running command's stdin");
    }

    /**
     * Sets the size of the terminal of a command started by {@link GuestChannel#startTerminal}; its
     * foreground process group gets {@code SIGWINCH}. 409 for a command without one; 501 by default.
     * Since 2.6.
     */
    default void resize(TerminalSize size) {
        throw io.vivarium.api.ApiException.notImplemented("this backend cannot resize a command's terminal");
    }

    /**
     * @param stdout bytes written to standard output since the last read (within the cap)
     * @param stderr bytes written to standard error since the last read (within the cap)
     * @param exited the command ended and every byte it wrote was returned
     * @param exitCode once exited: its status, 128+N when killed by signal N; otherwise -1
     * @param timedOut once exited: its timeout expired and its process group was killed
     * @param truncated a stream passed the cap; what came after it was discarded
     * @param durationMs how long it has run (or ran)
     */
    record Output(byte[] stdout, byte[] stderr, boolean exited, int exitCode, boolean timedOut, boolean truncated,
            long durationMs) {
    }
}
