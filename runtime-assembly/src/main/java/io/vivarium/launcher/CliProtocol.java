package io.vivarium.launcher;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code bin/vivarium-cli} and {@link CliServer} say to each other over the server's Unix socket.
 *
 * <p>The client sends one request: a 4-byte big-endian length, then that many bytes of NUL-terminated
 * UTF-8 strings: the protocol version ({@value #VERSION}), the caller's working directory, {@code 1}
 * if its stderr is a terminal else {@code 0}, its umask in octal, the number of environment entries,
 * those entries ({@code VIVARIUM_*=value}), then the command line's words. It then sends nothing more: its end of
 * the connection closing before the exit frame means the caller went away (Ctrl-C), and the command is
 * interrupted.
 *
 * <p>The server answers with frames: a type byte, a 4-byte big-endian length, the payload. {@code a}:
 * the command is taken (empty; before it, a closed connection means it never ran, and the client may
 * run it in a JVM of its own); {@code o}: bytes for stdout; {@code e}: bytes for stderr; {@code x}:
 * the exit code (4 bytes), the last frame.
 */
final class CliProtocol {
    static final String VERSION = "1";
    static final byte TAKEN = 'a';
    static final byte STDOUT = 'o';
    static final byte STDERR = 'e';
    static final byte EXIT = 'x';
    /** More than any command line the kernel would pass (ARG_MAX is 2 MiB with the environment). */
    static final int MAX_REQUEST = 4 << 20;

    /** A command line, and who runs it. */
    record Request(Caller caller, List<String> words) {
    }

    /** A request that does not follow the protocol: a client of another version, or not this client. */
    static final class Malformed extends IOException {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private CliProtocol() {
    }

    static Request read(ReadableByteChannel in) throws IOException {
        int length = readFully(in, ByteBuffer.allocate(4)).getInt();
        if (length <= 0 || length > MAX_REQUEST) {
            throw new Malformed("a request of " + length + " bytes");
        }
        ByteBuffer body = readFully(in, ByteBuffer.allocate(length));
        List<String> strings = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < length; i++) {
            if (body.get(i) == 0) {
                strings.add(new String(body.array(), start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start != length || strings.size() < 5 || !strings.get(0).equals(VERSION)) {
            throw new Malformed("not a version " + VERSION + " request of bin/vivarium-cli");
        }
        Path workDir = Path.of(strings.get(1));
        int umask;
        int entries;
        try {
            umask = Integer.parseInt(strings.get(3), 8);
            entries = Integer.parseInt(strings.get(4));
        } catch (NumberFormatException e) {
            throw new Malformed("no umask or count of environment entries");
        }
        if (!workDir.isAbsolute() || umask < 0 || umask > 0777 || entries < 0 || 5 + entries > strings.size()) {
            throw new Malformed("a working directory, umask or environment that is not one");
        }
        Map<String, String> env = new LinkedHashMap<>();
        for (String entry : strings.subList(5, 5 + entries)) {
            int eq = entry.indexOf('=');
            if (eq > 0 && entry.startsWith("VIVARIUM_")) {
                env.put(entry.substring(0, eq), entry.substring(eq + 1));
            }
        }
        Caller caller = Caller.client(Map.copyOf(env), workDir, strings.get(2).equals("1"), umask);
        return new Request(caller, List.copyOf(strings.subList(5 + entries, strings.size())));
    }

    /** Writes one frame; callers that share a channel hold one lock around it. */
    static void write(GatheringByteChannel out, byte type, byte[] payload, int offset, int length) throws IOException {
        ByteBuffer[] frame = {ByteBuffer.allocate(5).put(type).putInt(length).flip(), ByteBuffer.wrap(payload, offset, length)};
        while (frame[1].hasRemaining() || frame[0].hasRemaining()) {
            out.write(frame);
        }
    }

    static void writeTaken(GatheringByteChannel out) throws IOException {
        write(out, TAKEN, new byte[0], 0, 0);
    }

    static void writeExit(GatheringByteChannel out, int code) throws IOException {
        write(out, EXIT, ByteBuffer.allocate(4).putInt(code).array(), 0, 4);
    }

    private static ByteBuffer readFully(ReadableByteChannel in, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (in.read(buffer) < 0) {
                throw new EOFException("the client closed the connection before its request was whole");
            }
        }
        return buffer.flip();
    }
}
