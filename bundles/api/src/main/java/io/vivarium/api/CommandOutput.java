package io.vivarium.api;

import java.util.List;

/**
 * A read of a background command's log ({@link CommandService#output}).
 *
 * @param chunks what it wrote from the offset asked for on, in order
 * @param command the command as it is after those chunks (ended once every chunk was returned)
 */
public record CommandOutput(List<Chunk> chunks, CommandInfo command) {

    /**
     * @param stream {@value #STDOUT} or {@value #STDERR}
     * @param offset where the chunk starts in the command's log; the next starts at {@code offset + data.length}
     * @param data the bytes as written
     */
    public record Chunk(String stream, long offset, byte[] data) {
        public static final String STDOUT = "stdout";
        public static final String STDERR = "stderr";
    }
}
