package io.vivarium.api;

import java.time.Duration;
import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Commands run in the background in a sandbox, provided by core for
 * {@code /v1/sandboxes/{id}/commands}: each has an id, runs under the same timeout and output cap
 * as an exec, and its output is read as it is written, from any byte offset of the command's one
 * ordered log of stdout and stderr (so a reader that reconnects loses and repeats nothing). A running
 * command holds off branch, pause and checkpoint of its sandbox as an exec does; a delete ends it.
 * Every method is scoped to the caller's tenant (404 for another's sandbox or an unknown command)
 * and throws {@link ApiException} for what the caller can fix or retry. Since 2.2.
 */
@ProviderType
public interface CommandService {

    /** The most commands a sandbox keeps, running and ended (the oldest ended ones go first). */
    int MAX_COMMANDS = 16;

    /** Starts the command and answers once it runs (the same checks and errors as an exec's start). */
    CommandInfo start(Caller caller, String sandboxId, ExecRequest request);

    /**
     * Like {@link #start(Caller, String, ExecRequest)}; with {@code stdinOpen} the command's stdin
     * stays open after the request's {@code stdin}, for {@link #write}. Since 2.3.
     */
    CommandInfo start(Caller caller, String sandboxId, ExecRequest request, boolean stdinOpen);

    /**
     * Starts the command on a new terminal of {@code size}, its stdin open: its log is what the
     * terminal shows (stdout), {@link #write} types into it and {@link #resize} changes its size.
     * Since 2.4.
     */
    CommandInfo startTerminal(Caller caller, String sandboxId, ExecRequest request, TerminalSize size);

    /** Sets the size of a command's terminal; 409 for a command without one or once it has ended. Since 2.4. */
    CommandInfo resize(Caller caller, String sandboxId, String commandId, TerminalSize size);

    /**
     * Writes {@code data} to the stdin of a command started with its stdin open, waiting while the
     * command has not read what came before; {@code eof} closes its stdin after. 409 when its stdin
     * is closed or it has ended. Since 2.3.
     */
    CommandInfo write(Caller caller, String sandboxId, String commandId, byte[] data, boolean eof);

    /** The sandbox's commands, oldest first. */
    List<CommandInfo> list(Caller caller, String sandboxId);

    CommandInfo get(Caller caller, String sandboxId, String commandId);

    /**
     * The command's output from byte {@code from} of its log on, waiting up to {@code wait} when
     * there is none yet and the command still runs; 400 for an offset past what it wrote.
     */
    CommandOutput output(Caller caller, String sandboxId, String commandId, long from, Duration wait);

    /** Sends {@code signal} (1 to 64) to the command's process group; 409 once it has ended. */
    CommandInfo signal(Caller caller, String sandboxId, String commandId, int signal);

    /** The command once it has ended, or as it is after {@code wait}. */
    CommandInfo await(Caller caller, String sandboxId, String commandId, Duration wait);
}
