package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.util.Base64;
import java.util.List;

/**
 * Exec on our agent: {@code vivarium-exec} waits up to the deadline's worth of {@code wait-ms}, so a
 * short command is one request and one answer; a longer one is long-polled with {@code
 * vivarium-exec-poll}, collecting the streamed output up to the caller's cap.
 */
final class ExtensionExec {
    /** Longest single long-poll; answers come back at least this often. */
    private static final long MAX_WAIT_MILLIS = 30_000;
    /** How much before the deadline (at least; a tenth of the time left when more) the agent is asked to answer. */
    private static final long ANSWER_MARGIN_MILLIS = 50;
    private static final Duration KILL_GRACE = Duration.ofMillis(500);
    private static final int MAX_EXIT_CODE = 255;
    private static final int MAX_SIGNAL = 128;

    private ExtensionExec() {
    }

    static GuestExecResult run(GuestTransport transport, ExecSpec spec, Deadline deadline) {
        ObjectNode arguments = Wire.object();
        spec.argv().forEach(arguments.putArray("argv")::add);
        ObjectNode env = arguments.putObject("env");
        spec.env().forEach(env::put);
        if (spec.cwd() != null) {
            arguments.put("cwd", spec.cwd());
        }
        byte[] stdin = spec.stdin();
        if (stdin.length > 0) {
            arguments.put("stdin-b64", Base64.getEncoder().encodeToString(stdin));
        }
        if (spec.timeout() != null) {
            arguments.put("timeout-ms", Math.max(1, spec.timeout().toMillis()));
        }
        if (spec.uid() != null) {
            arguments.put("uid", spec.uid());
        }
        if (spec.gid() != null) {
            arguments.put("gid", spec.gid());
        }
        arguments.put("max-output-bytes", spec.maxOutputBytes());
        return start(transport, Commands.EXEC, arguments, "the command " + spec.argv().get(0), spec.maxOutputBytes(),
                deadline);
    }

    /**
     * {@code vivarium-list}: the agent walks {@code dirs} in a child of its own and prints the
     * records of the fingerprint mode {@code mode}; its output and exit status come back as an exec's.
     */
    static GuestExecResult list(GuestTransport transport, String mode, List<String> dirs, Duration timeout,
            int maxOutputBytes, Deadline deadline) {
        ObjectNode arguments = Wire.object().put("mode", mode);
        dirs.forEach(arguments.putArray("paths")::add);
        arguments.put("timeout-ms", Math.max(1, timeout.toMillis()));
        arguments.put("max-output-bytes", maxOutputBytes);
        return start(transport, Commands.LIST, arguments, "the listing", maxOutputBytes, deadline);
    }

    /** Sends {@code command} (which answers as {@code vivarium-exec} does) and polls it to the end. */
    private static GuestExecResult start(GuestTransport transport, String command, ObjectNode arguments, String what,
            int maxOutputBytes, Deadline deadline) {
        arguments.put("wait-ms", waitMillis(deadline));
        JsonNode answer = transport.call(command, arguments, Wire.TREE, Commands.MAX_LINE, deadline)
                .valueOrThrow(command);
        long handle = Wire.requireLong(Wire.requireObject(answer, command), "handle", 0, Long.MAX_VALUE, command);
        try {
            return collect(transport, command, what, maxOutputBytes, handle, answer, deadline);
        } catch (GuestAgentException e) {
            if (e.status() == 504) {
                kill(transport, handle);
            }
            throw e;
        }
    }

    private static GuestExecResult collect(GuestTransport transport, String started, String what, int maxOutputBytes,
            long handle, JsonNode first, Deadline deadline) {
        CappedBuffer out = new CappedBuffer(maxOutputBytes);
        CappedBuffer err = new CappedBuffer(maxOutputBytes);
        JsonNode answer = first;
        String command = started;
        while (true) {
            Poll poll = Poll.parse(answer, handle, command, out, err);
            if (poll.finished()) {
                return poll.result(out, err);
            }
            if (deadline.expired()) {
                throw GuestAgentException.deadline(what + " was still running; killed");
            }
            command = Commands.EXEC_POLL;
            ObjectNode pollArguments = Wire.object().put("handle", handle).put("wait-ms", waitMillis(deadline));
            Wire.Answer<JsonNode> next = transport.call(command, pollArguments, Wire.TREE, Commands.MAX_LINE, deadline);
            if (poll.exited() && next.isError() && "NotFound".equals(next.errorClass())) {
                // the previous answer held the last of the output and freed the handle
                return poll.result(out, err);
            }
            answer = next.valueOrThrow(command);
        }
    }

    /** How long the agent may hold its answer: long, but leaving the answer time to arrive before the deadline. */
    private static long waitMillis(Deadline deadline) {
        long remaining = deadline.remainingMillis();
        return Math.max(0, Math.min(MAX_WAIT_MILLIS, remaining - Math.max(ANSWER_MARGIN_MILLIS, remaining / 10)));
    }

    /** Kills the group, then polls once so the agent can free the handle (it holds at most 256). */
    private static void kill(GuestTransport transport, long handle) {
        Deadline grace = Deadline.after(KILL_GRACE);
        try {
            transport.call(Commands.EXEC_KILL, Wire.object().put("handle", handle).put("signal", 9), Wire.TREE,
                    Commands.MAX_LINE, grace);
            transport.call(Commands.EXEC_POLL, Wire.object().put("handle", handle).put("wait-ms", waitMillis(grace)),
                    Wire.TREE, Commands.MAX_LINE, grace);
        } catch (GuestAgentException ignored) {
            // best effort: the caller gets the deadline error either way
        }
    }

    /** One answer of {@code vivarium-exec} or {@code vivarium-exec-poll}; its output is appended to the buffers. */
    private record Poll(boolean exited, boolean complete, Integer exitCode, Integer signal, boolean timedOut,
            long durationMillis) {

        static Poll parse(JsonNode value, long handle, String command, CappedBuffer out, CappedBuffer err) {
            Wire.requireObject(value, command);
            if (Wire.requireLong(value, "handle", command) != handle) {
                throw Wire.malformed(command, "the answer is for another handle", null);
            }
            boolean exited = Wire.requireBoolean(value, "exited", command);
            byte[] outChunk = Wire.requireBase64(value, "out-b64", Commands.AGENT_CHUNK, command);
            byte[] errChunk = Wire.requireBase64(value, "err-b64", Commands.AGENT_CHUNK, command);
            out.write(outChunk, 0, outChunk.length);
            err.write(errChunk, 0, errChunk.length);
            out.markTruncated(Wire.requireBoolean(value, "out-truncated", command));
            err.markTruncated(Wire.requireBoolean(value, "err-truncated", command));
            Long exitCode = Wire.optionalLong(value, "exit-code", command);
            Long signal = Wire.optionalLong(value, "signal", command);
            if (exited && (exitCode == null) == (signal == null)) {
                throw Wire.malformed(command, "an exited process needs exactly one of exit-code and signal", null);
            }
            if (exitCode != null && (exitCode < 0 || exitCode > MAX_EXIT_CODE)
                    || signal != null && (signal < 1 || signal > MAX_SIGNAL)) {
                throw Wire.malformed(command, "exit-code or signal out of range", null);
            }
            boolean timedOut = Wire.requireBoolean(value, "timed-out", command);
            long duration = Wire.requireLong(value, "duration-ms", 0, Long.MAX_VALUE / 1_000_000, command);
            // a full chunk means the agent may hold more: poll again until the handle is gone
            boolean complete = outChunk.length < Commands.AGENT_CHUNK && errChunk.length < Commands.AGENT_CHUNK;
            return new Poll(exited, complete, exitCode == null ? null : exitCode.intValue(),
                    signal == null ? null : signal.intValue(), timedOut, duration);
        }

        boolean finished() {
            return exited && complete;
        }

        GuestExecResult result(CappedBuffer out, CappedBuffer err) {
            return new GuestExecResult(out.bytes(), err.bytes(), exitCode, signal, timedOut, out.truncated(),
                    err.truncated(), Duration.ofMillis(durationMillis));
        }
    }
}
