package io.vivarium.kit.guest;

import java.time.Duration;
import java.util.function.BiFunction;

import io.vivarium.api.TerminalSize;
import io.vivarium.api.spi.GuestProcess;

/**
 * A command started on our agent for streaming: each read is one long poll that the agent answers
 * as soon as the command wrote something ({@code on-output}), ended, or the wait passed.
 */
final class AgentProcess implements GuestProcess {
    /** Past the wait, how long the agent has to answer a read or a signal. */
    private static final Duration ANSWER_GRACE = Duration.ofSeconds(10);

    /** Runs one client call within a timeout, as {@link AgentGuestChannel} does for every call. */
    interface Calls {
        <T> T call(Duration timeout, BiFunction<GuestAgentClient, Deadline, T> call);
    }

    private final Calls calls;
    private final long handle;
    private ExtensionExec.Poll pending;
    /** What the answer that said the process exited reported (the handle is freed after it). */
    private ExtensionExec.Poll exitedWith;
    private boolean truncated;

    AgentProcess(Calls calls, ExtensionExec.Streamed started) {
        this.calls = calls;
        this.handle = started.handle();
        this.pending = started.first();
    }

    @Override
    public synchronized Output read(Duration wait) {
        ExtensionExec.Poll poll = pending;
        pending = null;
        if (poll == null || poll.out().length == 0 && poll.err().length == 0 && !poll.finished()) {
            boolean exitedBefore = exitedWith != null;
            poll = calls.call(wait.plus(ANSWER_GRACE),
                    (client, deadline) -> client.pollStreamed(handle, wait, exitedBefore, deadline));
        }
        if (poll.exited() && poll != ExtensionExec.Poll.GONE) {
            exitedWith = poll;
        }
        truncated |= poll.outTruncated() || poll.errTruncated();
        ExtensionExec.Poll state = exitedWith != null ? exitedWith : poll;
        boolean finished = poll.finished();
        return new Output(poll.out(), poll.err(), finished, finished ? state.status() : -1, state.timedOut(), truncated,
                state.durationMillis());
    }

    @Override
    public void write(byte[] data, boolean eof) {
        calls.call(ANSWER_GRACE, (client, deadline) -> {
            client.writeStreamed(handle, data, eof, deadline);
            return null;
        });
    }

    @Override
    public void resize(TerminalSize size) {
        calls.call(ANSWER_GRACE, (client, deadline) -> {
            client.resizeStreamed(handle, size, deadline);
            return null;
        });
    }

    @Override
    public void signal(int signal) {
        calls.call(ANSWER_GRACE, (client, deadline) -> {
            client.signalStreamed(handle, signal, deadline);
            return null;
        });
    }
}
