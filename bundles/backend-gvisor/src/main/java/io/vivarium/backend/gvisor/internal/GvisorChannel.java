package io.vivarium.backend.gvisor.internal;

import io.vivarium.guest.client.AgentGuestChannel;
import io.vivarium.guest.client.Deadline;
import io.vivarium.guest.client.GuestAgentClient;

import java.time.Duration;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * The way into a container: our agent on its Unix socket, which runsc's gofer created on the host
 * ({@code --host-uds=create}) in the directory bound into the container. The client keeps a few
 * idle connections and checks before each new one that the container's sandbox is still the one
 * recorded. Every call is bounded: an agent that does not answer is a 502, a container that is not
 * running a 503.
 */
final class GvisorChannel extends AgentGuestChannel {

    /** Past the command's own timeout, how long the agent has to report it (it kills the group at the timeout). */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);

    private final GuestAgentClient agent;
    private final BooleanSupplier running;

    GvisorChannel(String sandboxId, GuestAgentClient agent, BooleanSupplier running) {
        super(sandboxId, EXEC_ANSWER_GRACE);
        this.agent = agent;
        this.running = running;
    }

    @Override
    protected boolean running() {
        return running.getAsBoolean();
    }

    @Override
    protected <T> T withClient(BiFunction<GuestAgentClient, Deadline, T> call, Deadline deadline) {
        return call.apply(agent, deadline);
    }
}
