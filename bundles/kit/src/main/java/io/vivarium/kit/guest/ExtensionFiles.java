package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Base64;

/** Files on our agent: {@code vivarium-file-read} by offset, {@code vivarium-file-write} in chunks (atomic, fsynced). */
final class ExtensionFiles {
    private ExtensionFiles() {
    }

    static long read(GuestTransport transport, String path, long maxBytes, OutputStream sink, Deadline deadline)
            throws IOException {
        long offset = 0;
        while (true) {
            int count = (int) Math.min(Commands.AGENT_CHUNK, maxBytes - offset + 1);
            ObjectNode arguments = Wire.object().put("path", path).put("offset", offset).put("count", count);
            JsonNode answer = Wire.requireObject(transport.call(Commands.FILE_READ, arguments, Wire.TREE,
                    Commands.MAX_LINE, deadline).valueOrThrow(Commands.FILE_READ), Commands.FILE_READ);
            byte[] data = Wire.requireBase64(answer, "data-b64", count, Commands.FILE_READ);
            boolean eof = Wire.requireBoolean(answer, "eof", Commands.FILE_READ);
            Wire.requireLong(answer, "size", 0, Long.MAX_VALUE, Commands.FILE_READ);
            if (offset + data.length > maxBytes) {
                throw GuestAgentException.fileTooLarge("the guest file " + path + " is larger than " + maxBytes + " bytes");
            }
            sink.write(data);
            offset += data.length;
            if (eof) {
                return offset;
            }
            if (data.length == 0) {
                throw Wire.malformed(Commands.FILE_READ, "no data and no end of file", null);
            }
        }
    }

    static void write(GuestTransport transport, String path, byte[] content, Deadline deadline) {
        Long handle = null;
        int offset = 0;
        do {
            int end = (int) Math.min(content.length, (long) offset + Commands.AGENT_CHUNK);
            boolean last = end == content.length;
            ObjectNode arguments = Wire.object().put("path", path)
                    .put("data-b64", Base64.getEncoder().encodeToString(Arrays.copyOfRange(content, offset, end)))
                    .put("last", last);
            if (handle != null) {
                arguments.put("handle", handle);
            }
            JsonNode answer = Wire.requireObject(transport.call(Commands.FILE_WRITE, arguments, Wire.TREE,
                    Commands.MAX_LINE, deadline).valueOrThrow(Commands.FILE_WRITE), Commands.FILE_WRITE);
            Wire.requireLong(answer, "bytes", 0, Long.MAX_VALUE, Commands.FILE_WRITE);
            if (!last && handle == null) {
                handle = Wire.requireLong(answer, "handle", 0, Long.MAX_VALUE, Commands.FILE_WRITE);
            }
            offset = end;
        } while (offset < content.length);
    }
}
