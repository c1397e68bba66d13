package io.vivarium.core.internal;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.CommandService;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.spi.SandboxInstance;

/**
 * The background commands of every sandbox ({@link CommandService}). Each runs on a virtual thread
 * of its own that starts it through the sandbox's guest channel and reads it to the end into its
 * log, holding the sandbox's gate as an exec does for the command's whole life. A sandbox keeps
 * {@value CommandService#MAX_COMMANDS} commands; starting one more drops its oldest ended one, or is
 * a 409 while they all run. A deleted sandbox's commands end (lost) and go with it.
 */
final class BackgroundCommands {
    private static final System.Logger LOG = System.getLogger(BackgroundCommands.class.getName());
    private static final Pattern ID = Pattern.compile("cmd-[0-9a-f]{12}");
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The longest a caller may wait in one read or await. */
    static final Duration MAX_WAIT = Duration.ofSeconds(60);

    private final Sandboxes sandboxes;
    private final LiveInstances live;
    /** By sandbox id, then command id in the order they started. */
    private final Map<String, LinkedHashMap<String, BackgroundCommand>> bySandbox = new ConcurrentHashMap<>();

    BackgroundCommands(Sandboxes sandboxes, LiveInstances live) {
        this.sandboxes = sandboxes;
        this.live = live;
    }

    /** Starts a command; on a terminal of that size when {@code terminal} is not null (its stdin then open). */
    CommandInfo start(Caller caller, String sandboxId, ExecRequest request, boolean stdinOpen, TerminalSize terminal) {
        Sandbox sb = sandboxes.find(caller, sandboxId);
        SandboxInstance checked = live.forChannel(sb);
        ExecRequest complete = GuestAccess.complete(sb, checked, request);
        BackgroundCommand command = new BackgroundCommand(nextId(), sb.record().id(), complete.args(),
                stdinOpen || terminal != null, terminal != null);
        admit(command);
        Thread.ofVirtual().name("command-" + command.id).start(() -> run(sb, command, complete, stdinOpen, terminal));
        try {
            command.awaitStart(live.patience().plus(Duration.ofSeconds(30)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while command " + command.id + " started", 1);
        } catch (RuntimeException e) {
            forget(command);
            throw e;
        }
        return command.info();
    }

    private void run(Sandbox sb, BackgroundCommand command, ExecRequest request, boolean stdinOpen, TerminalSize terminal) {
        try {
            sb.gate.shared(live.patience(), () -> {
                var channel = live.forChannel(sb).channel();
                command.pump(terminal != null ? channel.startTerminal(request, terminal) : channel.start(request, stdinOpen));
                return null;
            });
        } catch (RuntimeException e) {
            if (command.started()) {
                LOG.log(System.Logger.Level.INFO, "command " + command.id + " in sandbox " + command.sandboxId + " lost: "
                        + e.getMessage());
            }
            command.failed(e);
        }
    }

    private void admit(BackgroundCommand command) {
        bySandbox.keySet().removeIf(id -> !sandboxes.exists(id)); // the commands of sandboxes deleted since go
        LinkedHashMap<String, BackgroundCommand> commands = bySandbox.computeIfAbsent(command.sandboxId,
                k -> new LinkedHashMap<>());
        synchronized (commands) {
            if (commands.size() >= CommandService.MAX_COMMANDS) {
                String oldestEnded = commands.values().stream().filter(c -> !c.running()).map(c -> c.id).findFirst()
                        .orElseThrow(() -> ApiException.conflict("sandbox " + command.sandboxId + " runs "
                                + CommandService.MAX_COMMANDS + " commands already; wait for one or signal it"));
                commands.remove(oldestEnded);
            }
            commands.put(command.id, command);
        }
    }

    private void forget(BackgroundCommand command) {
        LinkedHashMap<String, BackgroundCommand> commands = bySandbox.get(command.sandboxId);
        if (commands != null) {
            synchronized (commands) {
                commands.remove(command.id);
            }
        }
    }

    List<CommandInfo> list(Caller caller, String sandboxId) {
        return commandsOf(caller, sandboxId).stream().map(BackgroundCommand::info).toList();
    }

    CommandInfo get(Caller caller, String sandboxId, String commandId) {
        return find(caller, sandboxId, commandId).info();
    }

    CommandOutput output(Caller caller, String sandboxId, String commandId, long from, Duration wait) {
        BackgroundCommand command = find(caller, sandboxId, commandId);
        try {
            List<CommandOutput.Chunk> chunks = command.log.from(from, bounded(wait));
            return new CommandOutput(chunks, command.info());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while reading command " + commandId, 1);
        }
    }

    CommandInfo signal(Caller caller, String sandboxId, String commandId, int signal) {
        if (signal < 1 || signal > 64) {
            throw ApiException.badRequest("signal must be 1 to 64 (15 is SIGTERM, 9 SIGKILL), got " + signal);
        }
        BackgroundCommand command = find(caller, sandboxId, commandId);
        command.signal(signal);
        return command.info();
    }

    CommandInfo write(Caller caller, String sandboxId, String commandId, byte[] data, boolean eof) {
        BackgroundCommand command = find(caller, sandboxId, commandId);
        command.write(data, eof);
        return command.info();
    }

    CommandInfo resize(Caller caller, String sandboxId, String commandId, TerminalSize size) {
        BackgroundCommand command = find(caller, sandboxId, commandId);
        command.resize(size);
        return command.info();
    }

    CommandInfo await(Caller caller, String sandboxId, String commandId, Duration wait) {
        try {
            return find(caller, sandboxId, commandId).await(bounded(wait));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while waiting for command " + commandId, 1);
        }
    }

    private static Duration bounded(Duration wait) {
        if (wait.isNegative()) {
            throw ApiException.badRequest("a wait must not be negative");
        }
        return wait.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : wait;
    }

    private BackgroundCommand find(Caller caller, String sandboxId, String commandId) {
        if (commandId == null || !ID.matcher(commandId).matches()) {
            throw ApiException.badRequest("invalid command id: expected cmd- and 12 hex digits, like cmd-0123456789ab");
        }
        return commandsOf(caller, sandboxId).stream().filter(c -> c.id.equals(commandId)).findFirst()
                .orElseThrow(() -> ApiException.notFound("sandbox " + sandboxId + " has no command " + commandId
                        + " (a sandbox keeps its last " + CommandService.MAX_COMMANDS + ")"));
    }

    /** The sandbox's commands (404 for a sandbox the caller does not have). */
    private List<BackgroundCommand> commandsOf(Caller caller, String sandboxId) {
        Sandbox sb = sandboxes.find(caller, sandboxId);
        LinkedHashMap<String, BackgroundCommand> commands = bySandbox.get(sb.record().id());
        if (commands == null) {
            return List.of();
        }
        synchronized (commands) {
            return new ArrayList<>(commands.values());
        }
    }

    private static String nextId() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return "cmd-" + HexFormat.of().formatHex(b);
    }
}
