package io.vivarium.backend.qemu.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.guest.client.Deadline;
import io.vivarium.guest.client.ExecSpec;
import io.vivarium.guest.client.GuestAgentClient;
import io.vivarium.guest.client.GuestAgentException;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * The way into a VM: its guest agent on the virtio-serial port, through guest-client's stream
 * transport (one long-lived stream per VM, reopened after a drop). With our agent the
 * {@code vivarium-*} extensions carry exec and files; with a stock qemu-ga the client emulates what
 * it can over the stock commands and refuses the rest with a 501 that says so. Every call is
 * bounded: an agent that does not answer is a 502, a VM that is not running a 503.
 */
final class VmChannel implements GuestChannel {

    /** Past the command's own timeout, how long the agent has to report it. */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(5);
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration FILE_TIMEOUT = Duration.ofMinutes(2);

    private final String sandboxId;
    private final GuestAgentClient agent;
    private final BooleanSupplier running;

    VmChannel(String sandboxId, GuestAgentClient agent, BooleanSupplier running) {
        this.sandboxId = sandboxId;
        this.agent = agent;
        this.running = running;
    }

    @Override
    public PingResult ping() {
        Duration latency = call(PING_TIMEOUT, (client, deadline) -> client.ping(deadline));
        return new PingResult(true, 1, latency.toNanos() / 1e6);
    }

    @Override
    public ExecResult exec(ExecRequest request) {
        ExecSpec spec = ExecSpec.from(request);
        return call(spec.timeout().plus(EXEC_ANSWER_GRACE), (client, deadline) -> {
            try {
                return client.exec(spec, deadline).toExecResult();
            } catch (GuestAgentException e) {
                return e.asStartFailure().orElseThrow(() -> e);
            }
        });
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

    /** {@code guest-set-time}, which our agent and qemu-ga both have. */
    @Override
    public void setTime(Instant now) {
        long nanos = Math.addExact(Math.multiplyExact(now.getEpochSecond(), 1_000_000_000L), now.getNano());
        call(PING_TIMEOUT, (client, deadline) -> {
            client.setTime(nanos, deadline);
            return null;
        });
    }

    private <T> T call(Duration timeout, BiFunction<GuestAgentClient, Deadline, T> call) {
        if (!running.getAsBoolean()) {
            throw new ApiException(503, "sandbox " + sandboxId + " is not running");
        }
        try {
            return call.apply(agent, Deadline.after(timeout));
        } catch (GuestAgentException e) {
            if (!running.getAsBoolean()) {
                throw new ApiException(503, "sandbox " + sandboxId + " is not running");
            }
            throw e.forSandbox(sandboxId, timeout);
        }
    }
}
