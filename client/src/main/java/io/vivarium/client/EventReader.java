package io.vivarium.client;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import io.vivarium.api.CommandInfo;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Reads a {@code text/event-stream}: a command's into {@link CommandEvent}s, any other into its
 * {@link Frame}s; comments (keep-alives) skipped.
 */
final class EventReader implements Closeable {
    private final BufferedReader in;

    EventReader(InputStream stream) {
        this.in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8));
    }

    /** One event of the stream as sent: its name ({@code message} if none), its id (or null) and its data. */
    record Frame(String name, String id, String data) {
    }

    /** The next event of a command's stream; null at the end of the stream. */
    CommandEvent next() throws IOException {
        Frame f = nextFrame();
        return f == null ? null : event(f.name(), f.id(), f.data());
    }

    /** The next event, whatever it carries; null at the end of the stream. */
    Frame nextFrame() throws IOException {
        String name = null;
        String id = null;
        StringBuilder data = null;
        for (String line; (line = in.readLine()) != null;) {
            if (line.isEmpty()) {
                if (name != null || data != null) {
                    return new Frame(name == null ? "message" : name, id, data == null ? "null" : data.toString());
                }
            } else if (!line.startsWith(":")) {
                int colon = line.indexOf(':');
                String field = colon < 0 ? line : line.substring(0, colon);
                String value = colon < 0 ? "" : line.substring(colon + 1).replaceFirst("^ ", "");
                switch (field) {
                    case "event" -> name = value;
                    case "id" -> id = value;
                    case "data" -> data = (data == null ? new StringBuilder() : data.append('\n')).append(value);
                    default -> {
                        // a field this client does not know: ignored, as the specification says
                    }
                }
            }
        }
        return null;
    }

    private static CommandEvent event(String name, String id, String data) throws IOException {
        JsonNode json = Http.JSON.readTree(data);
        Long offset = id == null ? null : Long.valueOf(id);
        return switch (name) {
            case "stdout", "stderr" -> new CommandEvent(name, offset, json.has("b64")
                    ? Base64.getDecoder().decode(json.get("b64").asText())
                    : json.path("text").asText().getBytes(StandardCharsets.UTF_8), null, null);
            case "started", "exit" -> new CommandEvent(name, offset, new byte[0], Http.JSON.treeToValue(json, CommandInfo.class), null);
            default -> new CommandEvent(name, offset, new byte[0], null, json.path("error").asText(null));
        };
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
