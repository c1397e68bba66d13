package io.vivarium.client;

import java.nio.charset.StandardCharsets;

import io.vivarium.api.CommandInfo;

/**
 * One event of a command's stream (docs/clients.md): {@code started}, {@code stdout}, {@code stderr},
 * {@code exit} or {@code error}.
 *
 * @param name the event's name
 * @param id where the next chunk starts in the command's output (what a reconnect resumes at); null for {@code started} and {@code error}
 * @param data a chunk's bytes ({@code stdout}, {@code stderr}); empty otherwise
 * @param command the command ({@code started}, {@code exit}); null otherwise
 * @param error the message of an {@code error} event; null otherwise
 */
public record CommandEvent(String name, Long id, byte[] data, CommandInfo command, String error) {

    public boolean isOutput() {
        return "stdout".equals(name) || "stderr".equals(name);
    }

    /** Whether this is the stream's last event. */
    public boolean isLast() {
        return "exit".equals(name) || "error".equals(name);
    }

    /** The chunk as UTF-8 text (lossy for bytes that are not). */
    public String text() {
        return new String(data, StandardCharsets.UTF_8);
    }
}
