package io.vivarium.core.internal;

import java.time.Duration;
import java.util.List;

import io.vivarium.api.Caller;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.CommandService;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.TerminalSize;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/** The {@link CommandService} ({@code /v1/sandboxes/{id}/commands}) as a component: {@link BackgroundCommands} over the {@link Core} of the {@link SandboxManager}. */
@Component(service = CommandService.class)
public class CommandManager implements CommandService {
    @Reference
    private SandboxManager manager;
    private BackgroundCommands commands;

    @Activate
    void activate() {
        start(manager.core());
    }

    void start(Core core) {
        commands = new BackgroundCommands(core.sandboxes(), core.live());
    }

    @Override
    public CommandInfo start(Caller caller, String sandboxId, ExecRequest request) {
        return commands.start(caller, sandboxId, request, false, null);
    }

    @Override
    public CommandInfo start(Caller caller, String sandboxId, ExecRequest request, boolean stdinOpen) {
        return commands.start(caller, sandboxId, request, stdinOpen, null);
    }

    @Override
    public CommandInfo startTerminal(Caller caller, String sandboxId, ExecRequest request, TerminalSize size) {
        return commands.start(caller, sandboxId, request, true, size);
    }

    @Override
    public CommandInfo resize(Caller caller, String sandboxId, String commandId, TerminalSize size) {
        return commands.resize(caller, sandboxId, commandId, size);
    }

    @Override
    public CommandInfo write(Caller caller, String sandboxId, String commandId, byte[] data, boolean eof) {
        return commands.write(caller, sandboxId, commandId, data, eof);
    }

    @Override
    public List<CommandInfo> list(Caller caller, String sandboxId) {
        return commands.list(caller, sandboxId);
    }

    @Override
    public CommandInfo get(Caller caller, String sandboxId, String commandId) {
        return commands.get(caller, sandboxId, commandId);
    }

    @Override
    public CommandOutput output(Caller caller, String sandboxId, String commandId, long from, Duration wait) {
        return commands.output(caller, sandboxId, commandId, from, wait);
    }

    @Override
    public CommandInfo signal(Caller caller, String sandboxId, String commandId, int signal) {
        return commands.signal(caller, sandboxId, commandId, signal);
    }

    @Override
    public CommandInfo await(Caller caller, String sandboxId, String commandId, Duration wait) {
        return commands.await(caller, sandboxId, commandId, wait);
    }
}
