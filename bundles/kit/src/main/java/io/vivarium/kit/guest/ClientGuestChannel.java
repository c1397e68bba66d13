package io.vivarium.kit.guest;

import java.time.Duration;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * An {@link AgentGuestChannel} over the one client an instance holds for its agent (the client
 * keeps or reopens its own connections), and a check of whether the instance still runs: a QEMU
 * VM's virtio-serial stream, a gVisor container's socket.
 */
public class ClientGuestChannel extends AgentGuestChannel {

    private final GuestAgentClient agent;
    private final BooleanSupplier running;

    /** @param execAnswerGrace past a command's own timeout, how long the agent has to report it */
    public ClientGuestChannel(String sandboxId, GuestAgentClient agent, BooleanSupplier running,
            Duration execAnswerGrace) {
        super(sandboxId, execAnswerGrace);
        this.agent = agent;
        this.running = running;
    }

    @Override
    protected final boolean running() {
        return running.getAsBoolean();
    }

    @Override
    protected final <T> T withClient(BiFunction<GuestAgentClient, Deadline, T> call, Deadline deadline) {
        return call.apply(agent, deadline);
    }
}
