package io.vivarium.apiv1.internal;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandService;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.Role;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.http.Route;
import io.vivarium.api.http.RouteRequest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Background commands and streamed exec: start, list, read as server-sent events
 * ({@link CommandEvents}), signal, wait. Admin-only, as exec is.
 */
final class CommandRoutes {
    private static final int MAX_WAIT_SECS = 60;
    private static final int DEFAULT_WAIT_SECS = 30;
    /** What one write to a command's stdin may carry: what the agent holds for a command that has not read yet. */
    private static final int MAX_STDIN_BYTES = 1 << 20;

    /** What a terminal runs when the client names nothing. */
    private static final List<String> DEFAULT_SHELL = List.of("/bin/sh", "-i");
    private static final String DEFAULT_TERM = "xterm-256color";
    private static final ObjectMapper ARGS_JSON = new ObjectMapper();
    private static final TypeReference<List<String>> ARGS_TYPE = new TypeReference<>() {
    };

    /** Body of {@code POST .../signal}. */
    record SignalRequest(Integer signal) {
    }

    /** Body of {@code POST .../resize}. */
    record ResizeRequest(Integer rows, Integer cols) {
    }

    private CommandRoutes() {
    }

    static List<Route> of(CommandService commands) {
        return List.of(
                new Route("POST", "/sandboxes/{id}/exec/stream", Role.ADMIN, 200, r -> {
                    boolean kill = onDisconnect(r);
                    CommandInfo started = commands.start(r.caller(), r.pathParam("id"), r.body(ExecRequest.class), stdinOpen(r));
                    return new CommandEvents(commands, r.caller(), started, 0, true, kill);
                }),
                new Route("POST", "/sandboxes/{id}/commands", Role.ADMIN, 201, r -> flag(r, "tty")
                        ? commands.startTerminal(r.caller(), r.pathParam("id"), r.body(ExecRequest.class), querySize(r))
                        : commands.start(r.caller(), r.pathParam("id"), r.body(ExecRequest.class), stdinOpen(r))),
                new Route("POST", "/sandboxes/{id}/commands/{cid}/resize", Role.ADMIN, 200, r -> {
                    ResizeRequest size = r.body(ResizeRequest.class);
                    if (size.rows() == null || size.cols() == null) {
                        throw ApiException.badRequest("rows and cols are required, e.g. {\"rows\": 24, \"cols\": 80}");
                    }
                    return commands.resize(r.caller(), r.pathParam("id"), r.pathParam("cid"), size(size.rows(), size.cols()));
                }),
                new Route("POST", "/sandboxes/{id}/commands/{cid}/stdin", Role.ADMIN, 200,
                        r -> commands.write(r.caller(), r.pathParam("id"), r.pathParam("cid"), r.rawBody(), flag(r, "eof")),
                        MAX_STDIN_BYTES),
                new Route("GET", "/sandboxes/{id}/commands", Role.ADMIN, 200,
                        r -> commands.list(r.caller(), r.pathParam("id"))),
                new Route("GET", "/sandboxes/{id}/commands/{cid}", Role.ADMIN, 200,
                        r -> commands.get(r.caller(), r.pathParam("id"), r.pathParam("cid"))),
                new Route("GET", "/sandboxes/{id}/commands/{cid}/events", Role.ADMIN, 200, r -> {
                    long from = CommandEvents.resumeAt(r.header("Last-Event-ID").orElse(null), r.queryParam("from").orElse(null));
                    CommandInfo command = commands.get(r.caller(), r.pathParam("id"), r.pathParam("cid"));
                    commands.output(r.caller(), command.sandboxId(), command.id(), from, Duration.ZERO); // a bad offset is a 400 now
                    return new CommandEvents(commands, r.caller(), command, from, false, onDisconnect(r));
                }),
                new Route("GET", "/sandboxes/{id}/commands/{cid}/output", Role.ADMIN, 200,
                        r -> commands.output(r.caller(), r.pathParam("id"), r.pathParam("cid"),
                                CommandEvents.resumeAt(null, r.queryParam("from").orElse(null)), waitMillis(r))),
                new Route("POST", "/sandboxes/{id}/commands/{cid}/signal", Role.ADMIN, 200, r -> {
                    Integer signal = r.body(SignalRequest.class).signal();
                    if (signal == null) {
                        throw ApiException.badRequest("signal is required, e.g. {\"signal\": 15} (SIGTERM)");
                    }
                    return commands.signal(r.caller(), r.pathParam("id"), r.pathParam("cid"), signal);
                }),
                new Route("POST", "/sandboxes/{id}/commands/{cid}/wait", Role.ADMIN, 200,
                        r -> commands.await(r.caller(), r.pathParam("id"), r.pathParam("cid"), waitOf(r))),
                new Route("GET", "/sandboxes/{id}/pty", Role.ADMIN, 101, r -> {
                    commands.list(r.caller(), r.pathParam("id")); // another tenant's or no sandbox: 404 first, as on every route
                    if (!r.header("Upgrade").map(u -> u.strip().equalsIgnoreCase("websocket")).orElse(false)) {
                        throw ApiException.badRequest("GET /v1/sandboxes/{id}/pty upgrades to a WebSocket: send"
                                + " 'Connection: Upgrade' and 'Upgrade: websocket' (curl cannot; use a WebSocket client,"
                                + " or POST .../commands?tty=true and its events, stdin and resize routes)");
                    }
                    ExecRequest shell = new ExecRequest(terminalArgs(r), null, Map.of("TERM",
                            r.queryParam("term").orElse(DEFAULT_TERM)), r.queryParam("cwd").orElse(null), null, null);
                    CommandInfo started = commands.startTerminal(r.caller(), r.pathParam("id"), shell, querySize(r));
                    return new TerminalSocket(commands, r.caller(), started);
                }));
    }

    /** {@code ?args=} as a JSON array of strings (URL-encoded), by default an interactive shell. */
    private static List<String> terminalArgs(RouteRequest r) {
        String given = r.queryParam("args").orElse(null);
        if (given == null) {
            return DEFAULT_SHELL;
        }
        try {
            List<String> args = ARGS_JSON.readValue(given, ARGS_TYPE);
            if (!args.isEmpty() && args.stream().allMatch(a -> a != null && !a.isEmpty())) {
                return args;
            }
        } catch (JsonProcessingException e) {
            // the 400 below
        }
        throw ApiException.badRequest("args must be a non-empty JSON array of non-empty strings (URL-encoded),"
                + " e.g. ?args=%5B%22top%22%5D for [\"top\"], got " + given);
    }

    /** {@code ?stdin=open}: the command's stdin stays open for {@code .../stdin}; {@code closed} (the default) after the body's stdin. */
    private static boolean stdinOpen(RouteRequest r) {
        return either(r, "stdin", "closed", "open",
                "closed (the default: the body's stdin, then end of file) or open (write more with POST .../commands/{cid}/stdin)");
    }

    /** {@code ?rows=&cols=} of a terminal, 24 by 80 when not given. */
    static TerminalSize querySize(RouteRequest r) {
        return size((int) number(r, "rows", TerminalSize.DEFAULT.rows(), TerminalSize.MAX),
                (int) number(r, "cols", TerminalSize.DEFAULT.cols(), TerminalSize.MAX));
    }

    /** A terminal size from a caller: out of bounds is a 400 ({@link TerminalSize} says which bounds). */
    static TerminalSize size(int rows, int cols) {
        try {
            return new TerminalSize(rows, cols);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }

    static boolean flag(RouteRequest r, String name) {
        return either(r, name, "false", "true", "true or false");
    }

    /** {@code ?on_disconnect=kill}: the command dies with the stream; {@code keep} (the default) leaves it running. */
    private static boolean onDisconnect(RouteRequest r) {
        return either(r, "on_disconnect", "keep", "kill", "keep (the default: the command runs on) or kill");
    }

    /** Whether the query parameter {@code name} is {@code yes}; absent or {@code no} is false, anything else a 400. */
    private static boolean either(RouteRequest r, String name, String no, String yes, String what) {
        String given = r.queryParam(name).orElse(no);
        if (given.equals(no) || given.equals(yes)) {
            return given.equals(yes);
        }
        throw ApiException.badRequest(name + " must be " + what + ", got \"" + given + "\"");
    }

    /** {@code ?wait_ms=}: how long a read of the output waits for more, 0 (the default) to 60000. */
    private static Duration waitMillis(RouteRequest r) {
        return Duration.ofMillis(number(r, "wait_ms", 0, MAX_WAIT_SECS * 1000L));
    }

    private static Duration waitOf(RouteRequest r) {
        return Duration.ofSeconds(number(r, "timeout_secs", DEFAULT_WAIT_SECS, MAX_WAIT_SECS));
    }

    /** The query parameter {@code name} as a whole number from 0 to {@code max}, {@code absent} when not given; a 400 otherwise. */
    static long number(RouteRequest r, String name, long absent, long max) {
        String given = r.queryParam(name).orElse(null);
        if (given == null) {
            return absent;
        }
        try {
            long n = Long.parseLong(given);
            if (n >= 0 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // the 400 below
        }
        throw ApiException.badRequest(name + " must be 0 to " + max + ", got \"" + given + "\"");
    }
}
