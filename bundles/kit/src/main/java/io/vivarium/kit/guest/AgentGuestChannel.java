package io.vivarium.kit.guest;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.BiFunction;

import io.vivarium.api.ApiException;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.GuestProcess;

/**
 * A backend's {@link GuestChannel} over a guest agent: ping, exec, eval and files as bounded client
 * calls. A subclass says whether its instance runs and how a call gets a client; a call to an
 * instance that is not running is a 503, an agent that refuses passes on its status, and a silent
 * or missing agent becomes a message about this sandbox ({@link GuestAgentException#forSandbox}).
 */
public abstract class AgentGuestChannel implements GuestChannel {
    protected static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration FILE_TIMEOUT = Duration.ofMinutes(2);

    private final String sandboxId;
    private final Duration execAnswerGrace;

    /** @param execAnswerGrace past a command's own timeout, how long the agent has to report it */
    protected AgentGuestChannel(String sandboxId, Duration execAnswerGrace) {
        this.sandboxId = sandboxId;
        this.execAnswerGrace = execAnswerGrace;
    }

    /** Whether the instance behind this channel still runs (checked before and after a failed call). */
    protected abstract boolean running();

    /** Runs {@code call} with a client of the agent. */
    protected abstract <T> T withClient(BiFunction<GuestAgentClient, Deadline, T> call, Deadline deadline);

    /**
     * The command a client's request runs in the guest: as the agent's own user unless a subclass
     * says whose (a VM on a template's image runs its commands as the image's user). Since 1.4.
     */
    protected ExecSpec commandOf(ExecRequest request) {
        return ExecSpec.from(request);
    }

    /** The round trip of a {@code guest-ping}, and the warm interpreter's version once the agent knows it. */
    @Override
    public PingResult ping() {
        return call(PING_TIMEOUT, (client, deadline) -> {
            GuestAgentClient.Pong pong = client.pingAndVersion(deadline);
            return new PingResult(true, 1, pong.latency().toNanos() / 1e6, pong.pythonVersion().orElse(null));
        });
    }

    @Override
    public ExecResult exec(ExecRequest request) {
        ExecSpec spec = commandOf(request);
        return call(spec.timeout().plus(execAnswerGrace), (client, deadline) -> {
            try {
                return client.exec(spec, deadline).toExecResult();
            } catch (GuestAgentException e) {
                return e.asStartFailure().orElseThrow(() -> e);
            }
        });
    }

    /** Starts the command on the agent and answers with it at once; its output is read as it is written. */
    @Override
    public GuestProcess start(ExecRequest request) {
        return start(request, false);
    }

    @Override
    public GuestProcess start(ExecRequest request, boolean stdinOpen) {
        ExecSpec spec = commandOf(request);
        return new AgentProcess(this::call,
                call(PING_TIMEOUT, (client, deadline) -> client.startStreamed(spec, stdinOpen, null, deadline)));
    }

    @Override
    public GuestProcess startTerminal(ExecRequest request, TerminalSize size) {
        ExecSpec spec = commandOf(request);
        return new AgentProcess(this::call,
                call(PING_TIMEOUT, (client, deadline) -> client.startStreamed(spec, true, size, deadline)));
    }

    /** The agent's own walk where it knows {@code mode}: one process in the guest instead of one per file. */
    @Override
    public Optional<ExecResult> listFiles(String mode, List<String> dirs, ExecRequest request) {
        ExecSpec spec = ExecSpec.from(request);
        return call(spec.timeout().plus(execAnswerGrace), (client, deadline) -> client
                .list(mode, dirs, spec.timeout(), spec.maxOutputBytes(), deadline).map(GuestExecResult::toExecResult));
    }

    /** The agent bounds the eval itself; past {@code timeoutSecs} it has this grace to answer. */
    @Override
    public EvalResult evaluate(String code, int timeoutSecs) {
        Duration timeout = Duration.ofSeconds(timeoutSecs);
        return call(timeout.plus(execAnswerGrace), (client, deadline) -> client.eval(code, timeout, deadline));
    }

    @Override
    public byte[] readFile(String path, int maxBytes) {
        return call(FILE_TIMEOUT, (client, deadline) -> client.readFile(path, maxBytes, deadline));
    }

    @Override
    public void writeFile(String path, byte[] content) {
        call(FILE_TIMEOUT, (client, deadline) -> {
            client.writeFile(path, content, deadline);
            return null;
        });
    }

    /**
     * Runs one client call within {@code timeout}, passing on what the agent refused (404, 413,
     * 400, 403...) and turning a missing or silent agent into a message about this sandbox.
     */
    protected final <T> T call(Duration timeout, BiFunction<GuestAgentClient, Deadline, T> call) {
        if (!running()) {
            throw notRunning();
        }
        try {
            return withClient(call, Deadline.after(timeout));
        } catch (GuestAgentException e) {
            if (!running()) {
                throw notRunning();
            }
            throw e.forSandbox(sandboxId, timeout);
        }
    }

    private ApiException notRunning() {
        return new ApiException(503, "sandbox " + sandboxId + " is not running");
    }
}
