package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.EvalResult;
import io.vivarium.api.TerminalSize;

/**
 * The host's one client of the guest agent protocol (guest-agent/PROTOCOL.md): talks to our
 * {@code vivarium-agent} through its {@code vivarium-*} extensions and to a stock qemu-ga through
 * the stock commands, emulating what it lacks (see {@link AgentCapabilities}). Safe for many
 * threads. Every call takes a {@link Deadline} and fails with a {@link GuestAgentException} (502
 * misbehaving or unreachable peer, 504 deadline, 501 unsupported, 404 missing file) instead of
 * hanging; everything the peer says is parsed strictly and bounded.
 */
public final class GuestAgentClient implements AutoCloseable {
    private static final Duration SHUTDOWN_ERROR_WAIT = Duration.ofSeconds(1);
    private static final long MAX_FROZEN = 100_000;
    private static final String PYTHON_VERSION = "python-version";
    private static final int MAX_PYTHON_VERSION = 64;

    private final GuestTransport transport;
    private final EmulatedExec emulatedExec = new EmulatedExec();
    private final EmulatedFiles emulatedFiles = new EmulatedFiles(emulatedExec);

    public GuestAgentClient(GuestTransport transport) {
        this.transport = transport;
    }

    /** An agent listening on a Unix socket. */
    public static GuestAgentClient unixSocket(Path socket) {
        return new GuestAgentClient(GuestTransport.unixSocket(socket));
    }

    /** An agent listening on a Unix socket, with a check of every new connection ({@link GuestTransport#unixSocket(Path, Runnable)}). */
    public static GuestAgentClient unixSocket(Path socket, Runnable connected) {
        return new GuestAgentClient(GuestTransport.unixSocket(socket, connected));
    }

    /** The peer as {@code guest-info} described it (asked once per connection). */
    public PeerInfo peer(Deadline deadline) {
        return transport.peer(deadline);
    }

    public AgentCapabilities capabilities(Deadline deadline) {
        return AgentCapabilities.of(peer(deadline));
    }

    /** One {@code guest-ping} round trip; returns its latency. */
    public Duration ping(Deadline deadline) {
        return timedPing(deadline).latency();
    }

    /**
     * A {@code guest-ping} round trip's latency and the peer's interpreter version: our agent puts
     * {@code python-version} in its ping answer, so one round trip tells both; from a peer whose
     * answer lacks it (an agent from before, the stock qemu-ga) {@link #pythonVersion} asks.
     */
    public Pong pingAndVersion(Deadline deadline) {
        TimedPing ping = timedPing(deadline);
        JsonNode version = ping.answer().isObject() ? ping.answer().get(PYTHON_VERSION) : null;
        if (version == null) {
            return new Pong(ping.latency(), pythonVersion(deadline));
        }
        return new Pong(ping.latency(), version.isNull() ? Optional.empty() : Optional.of(checkVersion(version, "guest-ping")));
    }

    private TimedPing timedPing(Deadline deadline) {
        transport.peer(deadline);
        long start = System.nanoTime();
        JsonNode answer = call("guest-ping", null, deadline);
        return new TimedPing(Duration.ofNanos(System.nanoTime() - start), answer);
    }

    private record TimedPing(Duration latency, JsonNode answer) {
    }

    /** The answer of {@link #pingAndVersion}. */
    public record Pong(Duration latency, Optional<String> pythonVersion) {
    }

    /**
     * The version of the peer's warm interpreter ({@code guest-info}'s {@code python-version}, asked
     * afresh: it appears once the first eval started one, so {@link #peer}'s cached answer would not
     * have it); empty before that, or from a peer without eval (the stock qemu-ga), which is not asked.
     */
    public Optional<String> pythonVersion(Deadline deadline) {
        if (capabilities(deadline).support(AgentCapabilities.Feature.EVAL) != AgentCapabilities.Support.NATIVE) {
            return Optional.empty();
        }
        JsonNode version = call(PeerInfo.COMMAND, null, deadline).get(PYTHON_VERSION);
        return version == null ? Optional.empty() : Optional.of(checkVersion(version, PeerInfo.COMMAND));
    }

    private static String checkVersion(JsonNode version, String command) {
        if (!version.isTextual() || version.asText().isEmpty() || version.asText().length() > MAX_PYTHON_VERSION) {
            throw Wire.malformed(command, "\"" + PYTHON_VERSION + "\" is not a string of 1 to "
                    + MAX_PYTHON_VERSION + " characters", null);
        }
        return version.asText();
    }

    public GuestExecResult exec(ExecSpec spec, Deadline deadline) {
        AgentCapabilities capabilities = capabilities(deadline);
        return switch (capabilities.support(AgentCapabilities.Feature.EXEC_TIMEOUT)) {
            case NATIVE -> ExtensionExec.run(transport, spec, deadline);
            case EMULATED -> emulatedExec.run(transport, spec, deadline);
            case MISSING -> throw missing("run commands", capabilities);
        };
    }

    /** Starts {@code spec} for streaming (our agent only: the stock one returns output only at the end). */
    ExtensionExec.Streamed startStreamed(ExecSpec spec, boolean stdinOpen, TerminalSize terminal, Deadline deadline) {
        requireNativeExec(terminal == null ? "stream a command's output" : "run a command on a terminal", deadline);
        return ExtensionExec.startStreamed(transport, spec, stdinOpen, terminal, deadline);
    }

    /** Sets the terminal size of the streamed process {@code handle}. */
    void resizeStreamed(long handle, TerminalSize size, Deadline deadline) {
        ExtensionExec.resize(transport, handle, size, deadline);
    }

    /** Writes to the stdin of the streamed process {@code handle}. */
    void writeStreamed(long handle, byte[] data, boolean eof, Deadline deadline) {
        ExtensionExec.write(transport, handle, data, eof, deadline);
    }

    /** What the streamed process {@code handle} wrote next ({@link ExtensionExec#poll}). */
    ExtensionExec.Poll pollStreamed(long handle, Duration wait, boolean exitedBefore, Deadline deadline) {
        return ExtensionExec.poll(transport, handle, wait.toMillis(), exitedBefore, deadline);
    }

    /** Signals the streamed process {@code handle}'s group. */
    void signalStreamed(long handle, int signal, Deadline deadline) {
        ExtensionExec.signal(transport, handle, signal, deadline);
    }

    private void requireNativeExec(String what, Deadline deadline) {
        AgentCapabilities capabilities = capabilities(deadline);
        if (capabilities.support(AgentCapabilities.Feature.EXEC_TIMEOUT) != AgentCapabilities.Support.NATIVE) {
            throw missing(what, capabilities);
        }
    }

    /**
     * The files below {@code dirs} with the fingerprints of {@code mode}, walked by the agent
     * ({@code vivarium-list}), as the mode's listing command would print them; empty when the peer
     * cannot (the stock agent) or does not know the mode.
     */
    public Optional<GuestExecResult> list(String mode, List<String> dirs, Duration timeout, int maxOutputBytes,
            Deadline deadline) {
        if (!Commands.LIST_MODES.contains(mode)
                || capabilities(deadline).support(AgentCapabilities.Feature.LIST) != AgentCapabilities.Support.NATIVE) {
            return Optional.empty();
        }
        return Optional.of(ExtensionExec.list(transport, mode, dirs, timeout, maxOutputBytes, deadline));
    }

    /**
     * Reads a whole guest file into {@code sink}, in chunks; returns its size. A file larger than
     * {@code maxBytes} is a 413 (after {@code maxBytes} were written to the sink); a missing one a 404.
     */
    public long readFile(String path, long maxBytes, OutputStream sink, Deadline deadline) {
        GuestPaths.requireFile(path);
        if (maxBytes < 0) {
            throw new IllegalArgumentException("maxBytes must not be negative");
        }
        AgentCapabilities capabilities = capabilities(deadline);
        try {
            return switch (capabilities.support(AgentCapabilities.Feature.FILE_READ)) {
                case NATIVE -> ExtensionFiles.read(transport, path, maxBytes, sink, deadline);
                case EMULATED -> emulatedFiles.read(transport, path, maxBytes, sink, deadline);
                case MISSING -> throw missing("read files", capabilities);
            };
        } catch (IOException e) {
            throw new UncheckedIOException("writing a guest file to the caller's sink failed", e);
        }
    }

    public byte[] readFile(String path, int maxBytes, Deadline deadline) {
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        readFile(path, maxBytes, content, deadline);
        return content.toByteArray();
    }

    /** Replaces a guest file atomically (emulated on stock; see {@link AgentCapabilities.Feature#FILE_WRITE_ATOMIC}). */
    public void writeFile(String path, byte[] content, Deadline deadline) {
        GuestPaths.requireFile(path);
        AgentCapabilities capabilities = capabilities(deadline);
        switch (capabilities.support(AgentCapabilities.Feature.FILE_WRITE_ATOMIC)) {
            case NATIVE -> ExtensionFiles.write(transport, path, content, deadline);
            case EMULATED -> emulatedFiles.write(transport, path, content, deadline);
            case MISSING -> throw missing("write files", capabilities);
        }
    }

    /**
     * Evaluates Python code in the agent's warm interpreter ({@code vivarium-eval}), bounded by
     * {@code timeout} (then the agent replaces the interpreter and the result says so). A peer
     * without it (the stock qemu-ga) is a 501; a guest without python3 a 422; an eval while another
     * runs a 409. An exception raised by the code is a result with an error, not a failure.
     */
    public EvalResult eval(String code, Duration timeout, Deadline deadline) {
        if (code.length() > ExtensionEval.MAX_CODE_BYTES
                || code.getBytes(StandardCharsets.UTF_8).length > ExtensionEval.MAX_CODE_BYTES) {
            throw new IllegalArgumentException("code is larger than " + ExtensionEval.MAX_CODE_BYTES + " bytes");
        }
        AgentCapabilities capabilities = capabilities(deadline);
        if (capabilities.support(AgentCapabilities.Feature.EVAL) == AgentCapabilities.Support.MISSING) {
            throw GuestAgentException.unsupported("eval is not supported by the guest agent ("
                    + capabilities.peer().version() + "): it has no vivarium-eval, Vivarium's own agent does");
        }
        return ExtensionEval.run(transport, code, timeout, deadline);
    }

    /** The guest's clock, in nanoseconds since the epoch. */
    public long getTime(Deadline deadline) {
        JsonNode value = call("guest-get-time", null, deadline);
        if (!value.isIntegralNumber() || !value.canConvertToLong() || value.longValue() < 0) {
            throw Wire.malformed("guest-get-time", "not a non-negative integer", null);
        }
        return value.longValue();
    }

    /** Sets the guest's clock to {@code epochNanos}, or from its hardware clock when null. */
    public void setTime(Long epochNanos, Deadline deadline) {
        ObjectNode arguments = Wire.object();
        if (epochNanos != null) {
            arguments.put("time", epochNanos);
        }
        call("guest-set-time", arguments, deadline);
    }

    /**
     * Freezes the given mount points (all freezable ones when null); returns how many. If the freeze
     * fails or the deadline passes, a thaw is attempted before the error is thrown, so a failed call
     * never leaves the guest frozen as far as the agent still answers.
     */
    public int freeze(List<String> mountpoints, Deadline deadline) {
        ObjectNode arguments = Wire.object();
        if (mountpoints != null) {
            mountpoints.forEach(path -> GuestPaths.requireAbsolute(path, "a mount point"));
            mountpoints.forEach(arguments.putArray("mountpoints")::add);
        }
        try {
            return count(mountpoints == null ? "guest-fsfreeze-freeze" : "guest-fsfreeze-freeze-list", arguments,
                    deadline);
        } catch (GuestAgentException e) {
            try {
                thaw(Deadline.after(SHUTDOWN_ERROR_WAIT.multipliedBy(5)));
            } catch (GuestAgentException thawFailed) {
                e.addSuppressed(thawFailed);
            }
            throw e;
        }
    }

    public int thaw(Deadline deadline) {
        return count("guest-fsfreeze-thaw", null, deadline);
    }

    public boolean frozen(Deadline deadline) {
        JsonNode value = call("guest-fsfreeze-status", null, deadline);
        return switch (value.isTextual() ? value.textValue() : "") {
            case "frozen" -> true;
            case "thawed" -> false;
            default -> throw Wire.malformed("guest-fsfreeze-status", "neither \"frozen\" nor \"thawed\"", null);
        };
    }

    /**
     * Asks the guest to power down, halt or reboot. The agent answers only on failure, so an answer
     * that does not come within a second (or a closed connection) counts as accepted.
     */
    public void shutdown(String mode, Deadline deadline) {
        if (!List.of("powerdown", "halt", "reboot").contains(mode)) {
            throw new IllegalArgumentException("mode must be powerdown, halt or reboot");
        }
        Wire.Answer<JsonNode> answer;
        try {
            answer = transport.call("guest-shutdown", Wire.object().put("mode", mode), Wire.TREE,
                    Commands.MAX_LINE, deadline.atMost(SHUTDOWN_ERROR_WAIT));
        } catch (GuestAgentException noAnswer) {
            if (noAnswer.status() == 504 || noAnswer.closedByPeer()) {
                return;
            }
            throw noAnswer;
        }
        answer.valueOrThrow("guest-shutdown");
    }

    @Override
    public void close() {
        transport.close();
    }

    private JsonNode call(String command, ObjectNode arguments, Deadline deadline) {
        return transport.call(command, arguments, Wire.TREE, Commands.MAX_LINE, deadline).valueOrThrow(command);
    }

    private int count(String command, ObjectNode arguments, Deadline deadline) {
        JsonNode value = call(command, arguments, deadline);
        if (!value.isIntegralNumber() || value.longValue() < 0 || value.longValue() > MAX_FROZEN) {
            throw Wire.malformed(command, "not a count of filesystems", null);
        }
        return value.intValue();
    }

    private static GuestAgentException missing(String what, AgentCapabilities capabilities) {
        return GuestAgentException.unsupported("the guest agent (" + capabilities.peer().version()
                + ") cannot " + what + ": its commands for it are missing or disabled");
    }
}
