package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Files on the stock qemu-ga through {@code guest-file-*}. A write is emulated atomically: a
 * temporary file in the target's directory, written and closed, then renamed over the target with
 * {@code mv -f --} through {@code guest-exec}. Unlike our agent, nothing is fsynced (qemu-ga's
 * flush is only {@code fflush}), the file gets qemu-ga's default mode, and a symlink as the target
 * is replaced by {@code mv} (not followed). qemu-ga reports a missing file only in its error text,
 * which is matched for the 404.
 */
final class EmulatedFiles {
    private static final int CHUNK = 1024 * 1024;
    private static final String MISSING = "No such file or directory";
    private static final Duration CLEANUP = Duration.ofSeconds(2);

    private final EmulatedExec exec;

    EmulatedFiles(EmulatedExec exec) {
        this.exec = exec;
    }

    long read(GuestTransport transport, String path, long maxBytes, OutputStream sink, Deadline deadline)
            throws IOException {
        long handle = open(transport, path, "r", deadline);
        try {
            long total = 0;
            while (true) {
                int count = (int) Math.min(CHUNK, maxBytes - total + 1);
                JsonNode answer = Wire.requireObject(transport.call("guest-file-read",
                        Wire.object().put("handle", handle).put("count", count), Wire.TREE, Commands.MAX_LINE,
                        deadline).valueOrThrow("guest-file-read"), "guest-file-read");
                byte[] data = Wire.requireBase64(answer, "buf-b64", count, "guest-file-read");
                if (Wire.requireLong(answer, "count", "guest-file-read") != data.length) {
                    throw Wire.malformed("guest-file-read", "\"count\" differs from the data's length", null);
                }
                boolean eof = Wire.requireBoolean(answer, "eof", "guest-file-read");
                if (total + data.length > maxBytes) {
                    throw GuestAgentException.fileTooLarge("the guest file " + path + " is larger than " + maxBytes + " bytes");
                }
                sink.write(data);
                total += data.length;
                if (eof || data.length == 0) {
                    return total;
                }
            }
        } finally {
            closeQuietly(transport, handle, deadline);
        }
    }

    void write(GuestTransport transport, String path, byte[] content, Deadline deadline) {
        int slash = path.lastIndexOf('/');
        String temp = path.substring(0, slash + 1) + "." + path.substring(slash + 1) + ".vivarium-"
                + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        boolean renamed = false;
        try {
            long handle = open(transport, temp, "w", deadline);
            boolean written = false;
            try {
                for (int offset = 0; offset < content.length; offset += CHUNK) {
                    byte[] chunk = Arrays.copyOfRange(content, offset, Math.min(content.length, offset + CHUNK));
                    ObjectNode arguments = Wire.object().put("handle", handle)
                            .put("buf-b64", Base64.getEncoder().encodeToString(chunk));
                    JsonNode answer = Wire.requireObject(transport.call("guest-file-write", arguments, Wire.TREE,
                            Commands.MAX_LINE, deadline).valueOrThrow("guest-file-write"), "guest-file-write");
                    if (Wire.requireLong(answer, "count", "guest-file-write") != chunk.length) {
                        throw GuestAgentException.peer("guest-file-write wrote less than asked to " + temp);
                    }
                }
                written = true;
            } finally {
                if (!written) {
                    closeQuietly(transport, handle, deadline);
                }
            }
            // the close flushes: its failure is a failed write
            transport.call("guest-file-close", Wire.object().put("handle", handle), Wire.TREE, Commands.MAX_LINE,
                    deadline).valueOrThrow("guest-file-close");
            GuestExecResult moved = exec.run(transport, shell("mv", "-f", "--", temp, path), deadline);
            if (!Integer.valueOf(0).equals(moved.exitCode())) {
                throw GuestAgentException.peer("renaming the written file over " + path + " failed: "
                        + new String(moved.stderr(), java.nio.charset.StandardCharsets.UTF_8).strip());
            }
            renamed = true;
        } finally {
            if (!renamed) {
                removeQuietly(transport, temp);
            }
        }
    }

    private void removeQuietly(GuestTransport transport, String temp) {
        try {
            exec.run(transport, shell("rm", "-f", "--", temp), Deadline.after(CLEANUP));
        } catch (GuestAgentException ignored) {
            // the temp name is unique; a leftover is harmless and named after its target
        }
    }

    private static ExecSpec shell(String... argv) {
        return new ExecSpec(List.of(argv), Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), null, null,
                null, 64 * 1024, null, null);
    }

    private static long open(GuestTransport transport, String path, String mode, Deadline deadline) {
        Wire.Answer<JsonNode> answer = transport.call("guest-file-open",
                Wire.object().put("path", path).put("mode", mode), Wire.TREE, Commands.MAX_LINE, deadline);
        if (answer.isError() && answer.errorDesc().contains(MISSING)) {
            throw GuestAgentException.missingFile("no such file in the guest: " + path);
        }
        JsonNode handle = answer.valueOrThrow("guest-file-open");
        if (!handle.isIntegralNumber() || !handle.canConvertToLong() || handle.longValue() < 0) {
            throw Wire.malformed("guest-file-open", "the handle is not a non-negative integer", null);
        }
        return handle.longValue();
    }

    private static void closeQuietly(GuestTransport transport, long handle, Deadline deadline) {
        try {
            transport.call("guest-file-close", Wire.object().put("handle", handle), Wire.TREE, Commands.MAX_LINE,
                    deadline.expired() ? Deadline.after(CLEANUP) : deadline);
        } catch (GuestAgentException ignored) {
            // a handle left open is freed when qemu-ga restarts; the caller sees the first failure
        }
    }
}
