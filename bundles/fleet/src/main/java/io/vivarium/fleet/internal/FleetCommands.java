package io.vivarium.fleet.internal;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.CommandService;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.TerminalSize;

/**
 * A master's {@link CommandService}: the background commands of a sandbox placed on a node go to
 * that node's own command routes (its output read through the JSON output route, so the master's
 * event stream is its own, resumable the same way); those of the master's own sandboxes stay with
 * core's.
 */
final class FleetCommands implements CommandService {
    private final CommandService local;
    private final Forwarding forwarding;

    FleetCommands(CommandService local, Forwarding forwarding) {
        this.local = local;
        this.forwarding = forwarding;
    }

    @Override
    public CommandInfo start(Caller caller, String sandboxId, ExecRequest request) {
        return start(caller, sandboxId, request, false);
    }

    @Override
    public CommandInfo start(Caller caller, String sandboxId, ExecRequest request, boolean stdinOpen) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.start(caller, sandboxId, request, stdinOpen)
                : forwarding.call(r, "POST", "/commands" + (stdinOpen ? "?stdin=open" : ""), caller, request, CommandInfo.class);
    }

    @Override
    public CommandInfo startTerminal(Caller caller, String sandboxId, ExecRequest request, TerminalSize size) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.startTerminal(caller, sandboxId, request, size)
                : forwarding.call(r, "POST", "/commands?tty=true&rows=" + size.rows() + "&cols=" + size.cols(), caller, request,
                        CommandInfo.class);
    }

    @Override
    public CommandInfo resize(Caller caller, String sandboxId, String commandId, TerminalSize size) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.resize(caller, sandboxId, commandId, size)
                : forwarding.call(r, "POST", command(commandId) + "/resize", caller, size, CommandInfo.class);
    }

    @Override
    public List<CommandInfo> list(Caller caller, String sandboxId) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.list(caller, sandboxId)
                : List.of(forwarding.call(r, "GET", "/commands", caller, null, CommandInfo[].class));
    }

    @Override
    public CommandInfo get(Caller caller, String sandboxId, String commandId) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.get(caller, sandboxId, commandId)
                : forwarding.call(r, "GET", command(commandId), caller, null, CommandInfo.class);
    }

    @Override
    public CommandOutput output(Caller caller, String sandboxId, String commandId, long from, Duration wait) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.output(caller, sandboxId, commandId, from, wait)
                : forwarding.call(r, "GET", command(commandId) + "/output?from=" + from + "&wait_ms=" + wait.toMillis(), caller,
                        null, CommandOutput.class, wait.plus(NodeLink.CALL_TIMEOUT));
    }

    @Override
    public CommandInfo signal(Caller caller, String sandboxId, String commandId, int signal) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.signal(caller, sandboxId, commandId, signal)
                : forwarding.call(r, "POST", command(commandId) + "/signal", caller, Map.of("signal", signal), CommandInfo.class);
    }

    @Override
    public CommandInfo await(Caller caller, String sandboxId, String commandId, Duration wait) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        return r == null ? local.await(caller, sandboxId, commandId, wait)
                : forwarding.call(r, "POST", command(commandId) + "/wait?timeout_secs=" + wait.toSeconds(), caller, null,
                        CommandInfo.class, wait.plus(NodeLink.CALL_TIMEOUT));
    }

    @Override
    public CommandInfo write(Caller caller, String sandboxId, String commandId, byte[] data, boolean eof) {
        Forwarding.Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            return local.write(caller, sandboxId, commandId, data, eof);
        }
        byte[] answer = forwarding.bytes(r, "POST", command(commandId) + "/stdin" + (eof ? "?eof=true" : ""), caller, data);
        try {
            return FleetJson.read(answer, CommandInfo.class);
        } catch (IOException e) {
            throw ApiException.internal("node " + r.node() + " answered a write to command " + commandId + " with no command: "
                    + e.getMessage(), e);
        }
    }

    private static String command(String commandId) {
        return "/commands/" + Forwarding.segment(commandId);
    }
}
