package io.vivarium.itests.e2e;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.databind.JsonNode;

/** Reads a {@code text/event-stream} as a client does: events (name, id, data as JSON) and the comments between them. */
final class ServerSentEvents implements Closeable {

    /** An event; {@code comment} holds a comment line's text (a keep-alive) and the rest are null. */
    record Event(String name, String id, JsonNode data, String comment, long receivedNanos) {
        boolean isComment() {
            return comment != null;
        }
    }

    private final BufferedReader in;

    ServerSentEvents(InputStream stream) {
        this.in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8));
    }

    /** The next event or comment; null at the end of the stream. */
    Event next() throws IOException {
        String name = null;
        String id = null;
        StringBuilder data = null;
        for (String line; (line = in.readLine()) != null;) {
            if (line.isEmpty()) {
                if (name != null || data != null) {
                    return new Event(name == null ? "message" : name, id,
                            data == null ? null : Api.JSON.readTree(data.toString()), null, System.nanoTime());
                }
                continue;
            }
            if (line.startsWith(":")) {
                return new Event(null, null, null, line.substring(1).strip(), System.nanoTime());
            }
            int colon = line.indexOf(':');
            String field = colon < 0 ? line : line.substring(0, colon);
            String value = colon < 0 ? "" : line.substring(colon + 1).replaceFirst("^ ", "");
            switch (field) {
                case "event" -> name = value;
                case "id" -> id = value;
                case "data" -> data = (data == null ? new StringBuilder() : data.append('\n')).append(value);
                default -> throw new IOException("an unknown field in the stream: " + line);
            }
        }
        return null;
    }

    /** The next event that is not a comment (the stream's opening line, a keep-alive); null at the end. */
    Event nextEvent() throws IOException {
        Event e;
        do {
            e = next();
        } while (e != null && e.isComment());
        return e;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
