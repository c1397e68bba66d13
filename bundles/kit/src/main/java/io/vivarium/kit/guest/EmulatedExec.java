package io.vivarium.kit.guest;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Exec on the stock qemu-ga, which has only {@code guest-exec} (argv, env, stdin, captured output)
 * and {@code guest-exec-status}. The command always runs as {@code /bin/sh -c 'cd -- "$1" && shift
 * && exec "$@"' sh CWD ARGV...} (without the {@code cd} when no cwd is asked), so {@code argv[0]} is
 * looked up in the command's own {@code PATH} as with our agent, under {@code /usr/bin/setsid} when
 * the guest has it, so that the command leads its own process group.
 *
 * <p>The timeout is emulated by polling {@code guest-exec-status} (at most 50 ms apart) and, once
 * it passed, a second {@code guest-exec} of {@code sh -c 'kill -KILL -"$1"'} (dash's {@code kill}
 * refuses {@code --}). Guaranteed: the command is killed within a poll interval and a round trip of
 * its timeout. With setsid, its whole process group dies too (children that started their own
 * session or group escape, as with any group kill); without setsid, qemu-ga's children share its
 * process group, so only the command itself is killed and its children may live on. qemu-ga
 * reports an exit only once the output pipes are closed, so a surviving child that holds them
 * turns the timeout into a 504 at the caller's deadline. Output comes only once the command exits
 * (qemu-ga keeps up to 16 MiB per stream); the client decodes it straight into the caller's cap
 * and discards the rest. A command still running at the caller's deadline is killed the same way
 * and the caller gets a 504.
 */
final class EmulatedExec {
    private static final String EXEC = "guest-exec";
    private static final String STATUS = "guest-exec-status";
    private static final String SETSID = "/usr/bin/setsid";
    private static final String SHELL = "/bin/sh";
    private static final String RUN_IN = "cd -- \"$1\" && shift && exec \"$@\"";
    private static final String RUN = "exec \"$@\"";
    private static final String KILL_GROUP = "kill -KILL -\"$1\"";
    private static final String KILL_ONE = "kill -KILL \"$1\"";
    private static final long FIRST_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long MIN_POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    private static final long MAX_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final Duration KILL_GRACE = Duration.ofMillis(500);
    private static final long MAX_PID = Integer.MAX_VALUE;

    /** Null until the first exec finds out whether the guest has setsid. */
    private volatile Boolean hasSetsid;

    GuestExecResult run(GuestTransport transport, ExecSpec spec, Deadline deadline) {
        if (spec.uid() != null || spec.gid() != null) {
            throw GuestAgentException.unsupported("the guest runs the stock qemu-ga, which cannot run a command as "
                    + "another user (uid/gid); install vivarium-agent in the guest");
        }
        long started = System.nanoTime();
        boolean grouped = !Boolean.FALSE.equals(hasSetsid);
        long pid;
        try {
            pid = start(transport, spec, grouped, deadline);
        } catch (GuestAgentException e) {
            if (!grouped || hasSetsid != null || !e.getMessage().contains(SETSID)) {
                throw e;
            }
            hasSetsid = false;
            grouped = false;
            pid = start(transport, spec, false, deadline);
        }
        if (grouped) {
            hasSetsid = true;
        }
        try {
            return collect(transport, spec, pid, grouped, started, deadline);
        } catch (GuestAgentException e) {
            if (e.status() == 504) {
                kill(transport, pid, grouped, Deadline.after(KILL_GRACE));
            }
            throw e;
        }
    }

    private static GuestExecResult collect(GuestTransport transport, ExecSpec spec, long pid, boolean grouped,
            long started, Deadline deadline) {
        long killAt = spec.timeout() == null ? Long.MAX_VALUE : started + spec.timeout().toNanos();
        boolean killed = false;
        long pause = FIRST_POLL_NANOS;
        while (true) {
            Status status = transport.call(STATUS, Wire.object().put("pid", pid),
                    parser -> Status.read(parser, spec.maxOutputBytes()), Commands.MAX_STOCK_STATUS_LINE, deadline)
                    .valueOrThrow(STATUS);
            if (status.exited) {
                status.out.markTruncated(status.outTruncated);
                status.err.markTruncated(status.errTruncated);
                return new GuestExecResult(status.out.bytes(), status.err.bytes(), status.exitCode, status.signal,
                        killed, status.out.truncated(), status.err.truncated(),
                        Duration.ofNanos(System.nanoTime() - started));
            }
            if (!killed && System.nanoTime() - killAt >= 0) {
                kill(transport, pid, grouped, deadline);
                killed = true;
            }
            if (deadline.remainingNanos() <= pause) {
                throw GuestAgentException.deadline("the command " + spec.argv().get(0) + " was still running; killed");
            }
            long untilKill = killed ? pause : killAt - System.nanoTime();
            LockSupport.parkNanos(Math.max(MIN_POLL_NANOS, Math.min(pause, untilKill)));
            pause = Math.min(MAX_POLL_NANOS, pause * 2);
        }
    }

    private static long start(GuestTransport transport, ExecSpec spec, boolean grouped, Deadline deadline) {
        List<String> command = new ArrayList<>();
        if (grouped) {
            command.add(SETSID);
        }
        command.add(SHELL);
        command.add("-c");
        command.add(spec.cwd() == null ? RUN : RUN_IN);
        command.add("sh");
        if (spec.cwd() != null) {
            command.add(spec.cwd());
        }
        command.addAll(spec.argv());
        ObjectNode arguments = Wire.object().put("path", command.get(0)).put("capture-output", true);
        ArrayNode args = arguments.putArray("arg");
        command.subList(1, command.size()).forEach(args::add);
        ArrayNode env = arguments.putArray("env");
        spec.env().forEach((key, value) -> env.add(key + "=" + value));
        byte[] stdin = spec.stdin();
        if (stdin.length > 0) {
            arguments.put("input-data", Base64.getEncoder().encodeToString(stdin));
        }
        JsonNode answer = transport.call(EXEC, arguments, Wire.TREE, Commands.MAX_LINE, deadline).valueOrThrow(EXEC);
        return Wire.requireLong(Wire.requireObject(answer, EXEC), "pid", 1, MAX_PID, EXEC);
    }

    /** Kills the command (its group when it leads one), then collects the kill's own status. */
    private static void kill(GuestTransport transport, long pid, boolean grouped, Deadline deadline) {
        try {
            ObjectNode arguments = Wire.object().put("path", SHELL).put("capture-output", true);
            arguments.putArray("arg").add("-c").add(grouped ? KILL_GROUP : KILL_ONE).add("sh").add(Long.toString(pid));
            JsonNode answer = transport.call(EXEC, arguments, Wire.TREE, Commands.MAX_LINE, deadline)
                    .valueOrThrow(EXEC);
            long killer = Wire.requireLong(Wire.requireObject(answer, EXEC), "pid", 1, MAX_PID, EXEC);
            // qemu-ga keeps an exited child's entry until its status is read
            long pause = FIRST_POLL_NANOS;
            while (!deadline.expired()) {
                Status status = transport.call(STATUS, Wire.object().put("pid", killer),
                        parser -> Status.read(parser, 0), Commands.MAX_LINE, deadline).valueOrThrow(STATUS);
                if (status.exited) {
                    return;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(MAX_POLL_NANOS, pause * 2);
            }
        } catch (GuestAgentException e) {
            if (e.status() != 504) {
                throw e;
            }
        }
    }

    /** A {@code guest-exec-status} answer, read as a stream so its output goes straight into the caps. */
    private static final class Status {
        boolean exited;
        Integer exitCode;
        Integer signal;
        boolean outTruncated;
        boolean errTruncated;
        final CappedBuffer out;
        final CappedBuffer err;
        private boolean seenExited;

        private Status(int cap) {
            out = new CappedBuffer(cap);
            err = new CappedBuffer(cap);
        }

        static Status read(JsonParser parser, int cap) throws IOException {
            if (parser.currentToken() != JsonToken.START_OBJECT) {
                throw Wire.malformed(STATUS, "the return value is not an object", null);
            }
            Status status = new Status(cap);
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                JsonToken token = parser.nextToken();
                switch (field) {
                    case "exited" -> {
                        status.exited = bool(token, field);
                        status.seenExited = true;
                    }
                    case "exitcode" -> status.exitCode = integer(parser, token, field, 0, 255);
                    case "signal" -> status.signal = integer(parser, token, field, 1, 128);
                    case "out-truncated" -> status.outTruncated = bool(token, field);
                    case "err-truncated" -> status.errTruncated = bool(token, field);
                    case "out-data" -> binary(parser, token, field, status.out);
                    case "err-data" -> binary(parser, token, field, status.err);
                    default -> parser.skipChildren();
                }
            }
            if (!status.seenExited) {
                throw Wire.malformed(STATUS, "\"exited\" is missing", null);
            }
            if (status.exited && status.exitCode == null && status.signal == null) {
                throw Wire.malformed(STATUS, "an exited process without exitcode or signal", null);
            }
            return status;
        }

        private static boolean bool(JsonToken token, String field) {
            if (token != JsonToken.VALUE_TRUE && token != JsonToken.VALUE_FALSE) {
                throw Wire.malformed(STATUS, "\"" + field + "\" is not a boolean", null);
            }
            return token == JsonToken.VALUE_TRUE;
        }

        private static int integer(JsonParser parser, JsonToken token, String field, int min, int max)
                throws IOException {
            if (token != JsonToken.VALUE_NUMBER_INT || parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                    || parser.getLongValue() < min || parser.getLongValue() > max) {
                throw Wire.malformed(STATUS, "\"" + field + "\" is not an integer in " + min + ".." + max, null);
            }
            return parser.getIntValue();
        }

        private static void binary(JsonParser parser, JsonToken token, String field, CappedBuffer sink)
                throws IOException {
            if (token != JsonToken.VALUE_STRING) {
                throw Wire.malformed(STATUS, "\"" + field + "\" is not a string", null);
            }
            try {
                parser.readBinaryValue(sink);
            } catch (IOException e) {
                throw Wire.malformed(STATUS, "\"" + field + "\" is not valid base64", e);
            }
        }
    }
}
