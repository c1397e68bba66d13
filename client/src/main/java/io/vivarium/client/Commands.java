package io.vivarium.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.TerminalSize;

import com.fasterxml.jackson.core.type.TypeReference;

/**
 * Background commands and streamed exec (docs/clients.md). A stream that breaks is resumed where it
 * broke ({@code Last-Event-ID}), so a consumer sees every byte once.
 */
public final class Commands {
    /** How often a broken stream is resumed before the failure is thrown. */
    private static final int RESUMES = 5;

    private final Http http;

    Commands(Http http) {
        this.http = http;
    }

    private static String of(String sandboxId) {
        return "/v1/sandboxes/" + Http.segment(sandboxId) + "/commands";
    }

    private static String of(String sandboxId, String commandId) {
        return of(sandboxId) + "/" + Http.segment(commandId);
    }

    /** Starts a command in the background; {@code stdinOpen}: its stdin stays open for {@link #writeStdin}. */
    @Route("POST /v1/sandboxes/{id}/commands")
    public CommandInfo start(String sandboxId, ExecRequest request, boolean stdinOpen) {
        return http.json("POST", of(sandboxId) + (stdinOpen ? "?stdin=open" : ""), request, CommandInfo.class);
    }

    @Route("GET /v1/sandboxes/{id}/commands")
    public List<CommandInfo> list(String sandboxId) {
        return http.json("GET", of(sandboxId), null, new TypeReference<List<CommandInfo>>() { });
    }

    @Route("GET /v1/sandboxes/{id}/commands/{cid}")
    public CommandInfo get(String sandboxId, String commandId) {
        return http.json("GET", of(sandboxId, commandId), null, CommandInfo.class);
    }

    /** The output from byte {@code from} on, waiting up to {@code wait} (≤ 60 s) when there is none yet. */
    @Route("GET /v1/sandboxes/{id}/commands/{cid}/output")
    public CommandOutput output(String sandboxId, String commandId, long from, Duration wait) {
        return http.json("GET", of(sandboxId, commandId) + "/output?from=" + from + "&wait_ms=" + wait.toMillis(), null,
                CommandOutput.class, wait);
    }

    @Route("POST /v1/sandboxes/{id}/commands/{cid}/signal")
    public CommandInfo signal(String sandboxId, String commandId, int signal) {
        return http.json("POST", of(sandboxId, commandId) + "/signal", Map.of("signal", signal), CommandInfo.class);
    }

    /** The command once it has ended, or as it is after {@code wait} (≤ 60 s). */
    @Route("POST /v1/sandboxes/{id}/commands/{cid}/wait")
    public CommandInfo await(String sandboxId, String commandId, Duration wait) {
        return http.json("POST", of(sandboxId, commandId) + "/wait?timeout_secs=" + wait.toSeconds(), null, CommandInfo.class, wait);
    }

    /**
     * Opens a terminal of {@code size} running {@code args} (an interactive shell when empty) over
     * WebSocket; what it shows goes to {@code screen}, control messages the server refused to
     * {@code errors}.
     */
    @Route("GET /v1/sandboxes/{id}/pty")
    public Terminal terminal(String sandboxId, List<String> args, TerminalSize size, Consumer<byte[]> screen,
            Consumer<String> errors) {
        StringBuilder path = new StringBuilder("/v1/sandboxes/").append(Http.segment(sandboxId)).append("/pty?rows=")
                .append(size.rows()).append("&cols=").append(size.cols());
        if (!args.isEmpty()) {
            try {
                path.append("&args=").append(URLEncoder.encode(Http.JSON.writeValueAsString(args), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return new Terminal(http, path.toString(), screen, errors);
    }

    /** Sets the size of a terminal command's terminal (started with {@code ?tty=true} or by {@link #terminal}). */
    @Route("POST /v1/sandboxes/{id}/commands/{cid}/resize")
    public CommandInfo resize(String sandboxId, String commandId, TerminalSize size) {
        return http.json("POST", of(sandboxId, commandId) + "/resize", Map.of("rows", size.rows(), "cols", size.cols()),
                CommandInfo.class);
    }

    /** Writes to the stdin of a command started with its stdin open; {@code eof} closes it after. */
    @Route("POST /v1/sandboxes/{id}/commands/{cid}/stdin")
    public CommandInfo writeStdin(String sandboxId, String commandId, byte[] data, boolean eof) {
        byte[] answer = http.bytes("POST", of(sandboxId, commandId) + "/stdin" + (eof ? "?eof=true" : ""), data);
        try {
            return Http.JSON.readValue(answer, CommandInfo.class);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Runs a command and hands each event to {@code events} as it comes, until its last; returns
     * the ended command. A stream that breaks is resumed at the last event's id.
     */
    @Route("POST /v1/sandboxes/{id}/exec/stream")
    public CommandInfo execStream(String sandboxId, ExecRequest request, Consumer<CommandEvent> events) {
        Position at = new Position(0);
        String commandId;
        try (EventReader reader = new EventReader(http.stream("POST", "/v1/sandboxes/" + Http.segment(sandboxId) + "/exec/stream",
                request, null))) {
            CommandEvent started = reader.next();
            if (started == null || started.command() == null) {
                throw new VivariumException(0, "the exec's stream ended before it said which command it started", null, null);
            }
            commandId = started.command().id();
            events.accept(started);
            try {
                CommandInfo ended = follow(reader, events, at);
                if (ended != null) {
                    return ended;
                }
            } catch (IOException broke) {
                // resumed below, where it broke
            }
        } catch (IOException e) {
            throw new VivariumException(0, "the exec's stream broke before it started: " + e.getMessage(), null, e);
        }
        return events(sandboxId, commandId, at.offset, events);
    }

    /** Hands the command's events from byte {@code from} on to {@code events}, until its last; returns the ended command. */
    @Route("GET /v1/sandboxes/{id}/commands/{cid}/events")
    public CommandInfo events(String sandboxId, String commandId, long from, Consumer<CommandEvent> events) {
        Position at = new Position(from);
        for (int attempt = 0;; attempt++) {
            try (EventReader reader = new EventReader(http.stream("GET", of(sandboxId, commandId) + "/events", null,
                    Long.toString(at.offset)))) {
                CommandInfo ended = follow(reader, events, at);
                if (ended != null) {
                    return ended;
                }
            } catch (IOException e) {
                if (attempt >= RESUMES) {
                    throw new VivariumException(0, "the stream of command " + commandId + " broke " + (attempt + 1) + " times: "
                            + e.getMessage(), null, e);
                }
            } catch (VivariumException e) {
                if (attempt >= RESUMES || e.status() != 0) {
                    throw e;
                }
            }
        }
    }

    /** Where a stream got to: the id of its last event. */
    private static final class Position {
        long offset;

        Position(long offset) {
            this.offset = offset;
        }
    }

    /** Reads events until the last (its command returned) or the stream's end (null: resume at {@code at}). */
    private static CommandInfo follow(EventReader reader, Consumer<CommandEvent> events, Position at) throws IOException {
        for (CommandEvent e; (e = reader.next()) != null;) {
            events.accept(e);
            if (e.id() != null) {
                at.offset = e.id();
            }
            if ("error".equals(e.name())) {
                throw new VivariumException(404, e.error(), null, null);
            }
            if (e.isLast()) {
                return e.command();
            }
        }
        return null;
    }
}
