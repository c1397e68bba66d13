package io.vivarium.apiv1.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.CommandService;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.http.WebSocketEndpoint;
import io.vivarium.api.http.WebSocketPeer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

/**
 * A terminal command ({@link CommandService#startTerminal}) on a WebSocket: what the terminal shows
 * goes to the client as binary messages, the client's binary messages are typed into it, its text
 * messages are JSON controls ({@code resize}, {@code signal}). The client first gets a text message
 * {@code {"type": "started", "command": {...}}} and, when the command ends, {@code {"type": "exit",
 * "command": {...}}} and a normal close; a control it got wrong is answered {@code {"type": "error"}}. A client that goes hangs the
 * command up (SIGHUP to its group, SIGKILL if it is still there {@value #HANGUP_GRACE_SECS} s later).
 */
final class TerminalSocket implements WebSocketEndpoint {
    private static final System.Logger LOG = System.getLogger(TerminalSocket.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    private static final int SIGHUP = 1;
    private static final int SIGKILL = 9;
    static final int HANGUP_GRACE_SECS = 5;
    private static final Duration READ_WAIT = Duration.ofSeconds(10);

    private final CommandService commands;
    private final Caller caller;
    private final CommandInfo command;
    private volatile WebSocketPeer peer;

    TerminalSocket(CommandService commands, Caller caller, CommandInfo command) {
        this.commands = commands;
        this.caller = caller;
        this.command = command;
    }

    @Override
    public void opened(WebSocketPeer client) {
        peer = client;
        Thread.ofVirtual().name("terminal-" + command.id()).start(this::pump);
    }

    /** The terminal's output to the client, until the command ends or the client goes. */
    private void pump() {
        long offset = 0;
        try {
            peer.sendText(message("started", command));
            while (true) {
                CommandOutput read = commands.output(caller, command.sandboxId(), command.id(), offset, READ_WAIT);
                for (CommandOutput.Chunk chunk : read.chunks()) {
                    offset = chunk.offset() + chunk.data().length;
                    peer.sendBinary(chunk.data());
                }
                CommandInfo now = read.command();
                if (now.ended() && offset >= now.outputBytes()) {
                    peer.sendText(message("exit", now));
                    peer.close(WebSocketPeer.NORMAL, now.status());
                    return;
                }
            }
        } catch (IOException clientGone) {
            // closed() hangs the command up
        } catch (ApiException e) { // the sandbox went meanwhile
            peer.close(WebSocketPeer.SERVER_ERROR, reason(e.getMessage()));
        }
    }

    /** A text message {@code {"type": type, "command": {...}}}. */
    private static String message(String type, CommandInfo command) throws JsonProcessingException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        m.put("command", command);
        return JSON.writeValueAsString(m);
    }

    @Override
    public void binary(byte[] data) {
        try {
            commands.write(caller, command.sandboxId(), command.id(), data, false);
        } catch (ApiException e) {
            tell(e.getMessage());
        }
    }

    @Override
    public void text(String message) {
        try {
            JsonNode control = JSON.readTree(message);
            String type = control.path("type").asText("");
            switch (type) {
                case "resize" -> commands.resize(caller, command.sandboxId(), command.id(),
                        size(control.path("rows"), control.path("cols")));
                case "signal" -> commands.signal(caller, command.sandboxId(), command.id(), control.path("signal").asInt(0));
                default -> tell("unknown control message type \"" + type + "\": send {\"type\": \"resize\", \"rows\": R,"
                        + " \"cols\": C} or {\"type\": \"signal\", \"signal\": N}; input goes as binary messages");
            }
        } catch (JsonProcessingException e) {
            tell("a text message must be one JSON object (a control); input goes as binary messages");
        } catch (ApiException e) {
            tell(e.getMessage());
        }
    }

    private static TerminalSize size(JsonNode rows, JsonNode cols) {
        if (!rows.canConvertToInt() || !cols.canConvertToInt() || !rows.isIntegralNumber() || !cols.isIntegralNumber()) {
            throw ApiException.badRequest("resize needs whole numbers rows and cols, e.g. {\"type\": \"resize\", \"rows\": 24, \"cols\": 80}");
        }
        return CommandRoutes.size(rows.asInt(), cols.asInt());
    }

    /** A control the client got wrong: said in a text message {@code {"type": "error", "error": ...}}; the terminal goes on. */
    private void tell(String error) {
        try {
            peer.sendText(JSON.writeValueAsString(Map.of("type", "error", "error", error)));
        } catch (IOException gone) {
            // closed() follows
        }
    }

    @Override
    public void closed(int code, String reason) {
        Thread.ofVirtual().name("terminal-hangup-" + command.id()).start(this::hangUp);
    }

    /** The client went: hang the command up as a closed terminal would, and kill what ignores it. */
    private void hangUp() {
        try {
            if (!send(SIGHUP)) {
                return;
            }
            if (!commands.await(caller, command.sandboxId(), command.id(), Duration.ofSeconds(HANGUP_GRACE_SECS)).ended()) {
                send(SIGKILL);
            }
        } catch (ApiException e) {
            LOG.log(Level.DEBUG, "hang-up of terminal " + command.id() + ": " + e.getMessage());
        }
    }

    /** Signals the command; false when it had ended. */
    private boolean send(int signal) {
        try {
            commands.signal(caller, command.sandboxId(), command.id(), signal);
            return true;
        } catch (ApiException e) {
            if (e.status() == 409) {
                return false;
            }
            throw e;
        }
    }

    /** A close reason fits in 123 bytes. */
    private static String reason(String message) {
        return message.length() > 100 ? message.substring(0, 100) + "..." : message;
    }
}
