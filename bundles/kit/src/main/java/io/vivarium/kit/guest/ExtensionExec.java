package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.util.Base64;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.TerminalSize;

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
    /** How long a write waits before asking again while the command's stdin is full. */
    private static final long WRITE_RETRY_MILLIS = 20;

    private ExtensionExec() {
    }

    static GuestExecResult run(GuestTransport transport, ExecSpec spec, Deadline deadline) {
        return start(transport, Commands.EXEC, arguments(spec), "the command " + spec.argv().get(0), spec.maxOutputBytes(),
                deadline);
    }

    /**
     * Starts {@code spec} and answers at once with its handle and what it wrote so far; the rest is
     * read with {@link #poll} (the process is killed by the agent at its own timeout). With a
     * {@code terminal} (or null) it runs on one of that size.
     */
    static Streamed startStreamed(GuestTransport transport, ExecSpec spec, boolean stdinOpen, TerminalSize terminal,
            Deadline deadline) {
        ObjectNode arguments = arguments(spec).put("wait-ms", 0);
        if (stdinOpen) {
            arguments.put("stdin-open", true);
        }
        if (terminal != null) {
            arguments.put("tty", true).put("rows", terminal.rows()).put("cols", terminal.cols());
        }
        JsonNode answer = transport.call(Commands.EXEC, arguments, Wire.TREE, Commands.MAX_LINE, deadline)
                .valueOrThrow(Commands.EXEC);
        long handle = Wire.requireLong(Wire.requireObject(answer, Commands.EXEC), "handle", 0, Long.MAX_VALUE, Commands.EXEC);
        return new Streamed(handle, Poll.parse(answer, handle, Commands.EXEC));
    }

    /**
     * What the process {@code handle} wrote since the last answer, waiting up to {@code waitMillis}
     * for it to write anything or end; a process whose last answer said it exited is reported as
     * finished with nothing more.
     */
    static Poll poll(GuestTransport transport, long handle, long waitMillis, boolean exitedBefore, Deadline deadline) {
        ObjectNode arguments = Wire.object().put("handle", handle).put("wait-ms", waitMillis).put("on-output", true);
        Wire.Answer<JsonNode> next = transport.call(Commands.EXEC_POLL, arguments, Wire.TREE, Commands.MAX_LINE, deadline);
        if (exitedBefore && next.isError() && "NotFound".equals(next.errorClass())) {
            return Poll.GONE;
        }
        return Poll.parse(next.valueOrThrow(Commands.EXEC_POLL), handle, Commands.EXEC_POLL);
    }

    /** Sends {@code signal} to the process group of {@code handle}; a handle the agent no longer has is left alone. */
    static void signal(GuestTransport transport, long handle, int signal, Deadline deadline) {
        Wire.Answer<JsonNode> answer = transport.call(Commands.EXEC_KILL, Wire.object().put("handle", handle).put("signal", signal),
                Wire.TREE, Commands.MAX_LINE, deadline);
        if (!(answer.isError() && "NotFound".equals(answer.errorClass()))) {
            answer.valueOrThrow(Commands.EXEC_KILL);
        }
    }

    /**
     * Writes {@code data} to the stdin of {@code handle} (started with its stdin open); {@code eof}
     * closes it after. While the agent holds what the command has not read yet, it is asked again.
     */
    static void write(GuestTransport transport, long handle, byte[] data, boolean eof, Deadline deadline) {
        ObjectNode arguments = Wire.object().put("handle", handle).put("data-b64", Base64.getEncoder().encodeToString(data))
                .put("eof", eof);
        while (true) {
            Wire.Answer<JsonNode> answer = transport.call(Commands.EXEC_WRITE, arguments, Wire.TREE, Commands.MAX_LINE, deadline);
            if (!(answer.isError() && "LimitExceeded".equals(answer.errorClass()))) {
                answer.valueOrThrow(Commands.EXEC_WRITE);
                return;
            }
            if (deadline.expired()) {
                throw GuestAgentException.deadline("the command did not read its stdin");
            }
            try {
                Thread.sleep(WRITE_RETRY_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw GuestAgentException.deadline("interrupted while the command's stdin was full");
            }
        }
    }

    /** Sets the terminal size of {@code handle}; one without a terminal is a 409. */
    static void resize(GuestTransport transport, long handle, TerminalSize size, Deadline deadline) {
        Wire.Answer<JsonNode> answer = transport.call(Commands.EXEC_RESIZE,
                Wire.object().put("handle", handle).put("rows", size.rows()).put("cols", size.cols()), Wire.TREE,
                Commands.MAX_LINE, deadline);
        if (answer.isError() && "InvalidParameter".equals(answer.errorClass())) {
            throw new ApiException(409, "the command has no terminal to resize");
        }
        if (!(answer.isError() && "NotFound".equals(answer.errorClass()))) {
            answer.valueOrThrow(Commands.EXEC_RESIZE);
        }
    }

    /** A process started for streaming: its handle and the agent's first answer. */
    record Streamed(long handle, Poll first) {
    }

    private static ObjectNode arguments(ExecSpec spec) {
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
        return arguments;
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
            Poll poll = Poll.parse(answer, handle, command);
            poll.appendTo(out, err);
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

    /** One answer of {@code vivarium-exec} or {@code vivarium-exec-poll}: the output it carries and the process's state. */
    record Poll(byte[] out, byte[] err, boolean outTruncated, boolean errTruncated, boolean exited, boolean complete,
            Integer exitCode, Integer signal, boolean timedOut, long durationMillis) {

        /** After the answer that said the process exited: the handle is gone, nothing more came. */
        static final Poll GONE = new Poll(new byte[0], new byte[0], false, false, true, true, null, null, false, 0);

        static Poll parse(JsonNode value, long handle, String command) {
            Wire.requireObject(value, command);
            if (Wire.requireLong(value, "handle", command) != handle) {
                throw Wire.malformed(command, "the answer is for another handle", null);
            }
            boolean exited = Wire.requireBoolean(value, "exited", command);
            byte[] outChunk = Wire.requireBase64(value, "out-b64", Commands.AGENT_CHUNK, command);
            byte[] errChunk = Wire.requireBase64(value, "err-b64", Commands.AGENT_CHUNK, command);
            boolean outTruncated = Wire.requireBoolean(value, "out-truncated", command);
            boolean errTruncated = Wire.requireBoolean(value, "err-truncated", command);
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
            return new Poll(outChunk, errChunk, outTruncated, errTruncated, exited, complete,
                    exitCode == null ? null : exitCode.intValue(), signal == null ? null : signal.intValue(), timedOut, duration);
        }

        void appendTo(CappedBuffer out, CappedBuffer err) {
            out.write(this.out, 0, this.out.length);
            err.write(this.err, 0, this.err.length);
            out.markTruncated(outTruncated);
            err.markTruncated(errTruncated);
        }

        /** The API's status of an exited process: its code, 128+N for signal N. */
        int status() {
            return exitCode != null ? exitCode : signal != null ? 128 + signal : -1;
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
