package io.vivarium.apiv1.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.CommandService;
import io.vivarium.api.http.BinaryBody;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

/**
 * A background command's output as server-sent events (docs/clients.md): an event {@code stdout}
 * or {@code stderr} per chunk, its {@code id} the byte offset where the next chunk starts (what a
 * client sends back as {@code Last-Event-ID} to resume), its data {@code {"offset", "text"}}, or
 * {@code "b64"} for bytes that are not UTF-8 on their own; a {@code : keep-alive} comment every
 * {@value #KEEP_ALIVE_SECS} s of silence; and a last event {@code exit} carrying the command (exit
 * code, timed-out and truncated), or {@code error} if the sandbox went meanwhile. The stream is written as the command writes: a slow reader holds
 * back only its own stream (the command's log is bounded by its output cap), and a reader that goes
 * leaves the command running, unless it asked for the command to be killed then.
 */
final class CommandEvents implements BinaryBody {
    static final String CONTENT_TYPE = "text/event-stream";
    static final int KEEP_ALIVE_SECS = 10;
    private static final int KILL = 9;
    private static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

    private final CommandService commands;
    private final Caller caller;
    private final CommandInfo command;
    private final long from;
    private final boolean announce;
    private final boolean killOnDisconnect;

    /**
     * @param announce whether the stream opens with an event {@code started} carrying the command (a stream that started it)
     * @param killOnDisconnect whether a reader that goes takes the command with it (SIGKILL to its group), found at the next write
     */
    CommandEvents(CommandService commands, Caller caller, CommandInfo command, long from, boolean announce,
            boolean killOnDisconnect) {
        this.commands = commands;
        this.caller = caller;
        this.command = command;
        this.from = from;
        this.announce = announce;
        this.killOnDisconnect = killOnDisconnect;
    }

    @Override
    public String contentType() {
        return CONTENT_TYPE;
    }

    @Override
    public long length() {
        return -1;
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
        try {
            write(out);
        } catch (IOException readerGone) {
            if (killOnDisconnect) {
                try {
                    commands.signal(caller, command.sandboxId(), command.id(), KILL);
                } catch (ApiException ended) {
                    // it ended meanwhile, or its sandbox went
                }
            }
            throw readerGone;
        }
    }

    private void write(OutputStream out) throws IOException {
        if (announce) {
            event(out, "started", null, JSON.writeValueAsString(command));
        } else {
            // the answer's head goes now, not with the first output: a client waits for it before it reads on
            out.write((": command " + command.id() + "\n\n").getBytes(StandardCharsets.US_ASCII));
        }
        out.flush();
        long offset = from;
        while (true) {
            CommandOutput read;
            try {
                read = commands.output(caller, command.sandboxId(), command.id(), offset, Duration.ofSeconds(KEEP_ALIVE_SECS));
            } catch (ApiException gone) { // the sandbox was deleted meanwhile: the status was sent, so say it in the stream
                event(out, "error", null, JSON.writeValueAsString(Map.of("error", gone.getMessage())));
                out.flush();
                return;
            }
            for (CommandOutput.Chunk chunk : read.chunks()) {
                offset = chunk.offset() + chunk.data().length;
                event(out, chunk.stream(), offset, data(chunk));
            }
            CommandInfo now = read.command();
            if (now.ended() && offset >= now.outputBytes()) {
                event(out, "exit", offset, JSON.writeValueAsString(now));
                out.flush();
                return;
            }
            if (read.chunks().isEmpty()) {
                out.write(": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII));
            }
            out.flush();
        }
    }

    private static String data(CommandOutput.Chunk chunk) throws JsonProcessingException {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("offset", chunk.offset());
        try {
            data.put("text", StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(chunk.data())).toString());
        } catch (CharacterCodingException notText) {
            data.put("b64", Base64.getEncoder().encodeToString(chunk.data()));
        }
        return JSON.writeValueAsString(data);
    }

    /** One event; {@code data} is one line of JSON (no raw newline in it). */
    static void event(OutputStream out, String name, Long id, String data) throws IOException {
        StringBuilder e = new StringBuilder("event: ").append(name).append('\n');
        if (id != null) {
            e.append("id: ").append(id).append('\n');
        }
        e.append("data: ").append(data).append("\n\n");
        out.write(e.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Where a stream resumes: the {@code Last-Event-ID} a reconnecting client sends, else {@code ?from=}, else 0; 400 for anything else. */
    static long resumeAt(String lastEventId, String from) {
        String given = lastEventId != null ? lastEventId : from;
        if (given == null) {
            return 0;
        }
        try {
            long offset = Long.parseLong(given.strip());
            if (offset >= 0) {
                return offset;
            }
        } catch (NumberFormatException e) {
            // the 400 below
        }
        throw ApiException.badRequest("Last-Event-ID and from must be a byte offset the stream gave as an "
                + "event id (a number ≥ 0), got \"" + given + "\"");
    }
}
