package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.kit.guest.ClientGuestChannel;
import io.vivarium.kit.guest.GuestAgentClient;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * A running Firecracker microVM, created or adopted: its VMM process and the guest agent, reached
 * through the VMM's vsock socket. {@link #close()} lets go of this revision's connections; the
 * microVM runs on for the next revision to adopt.
 */
final class FirecrackerInstance implements SandboxInstance, AutoCloseable {

    /** The key of {@link InstanceState#data()} that holds the VMM's start time; its pid is {@link InstanceState#pid()}. */
    static final String START_TIME = "start_time";
    /** Past a command's own timeout, how long the agent has to report it. */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);

    private final String id;
    private final VmmProcess vmm;
    private final GuestAgentClient client;
    private final ClientGuestChannel channel;

    FirecrackerInstance(String id, VmmProcess vmm, GuestAgentClient client) {
        this.id = id;
        this.vmm = vmm;
        this.client = client;
        this.channel = new ClientGuestChannel(id, client, this::alive, EXEC_ANSWER_GRACE);
    }

    /** The VMM a state records; empty for a state without one (a create the daemon did not see finish). */
    static Optional<VmmProcess> vmmOf(InstanceState state) {
        String start = state.data().get(START_TIME);
        return state.pid() > 0 && start != null ? Optional.of(new VmmProcess(state.pid(), start)) : Optional.empty();
    }

    VmmProcess vmm() {
        return vmm;
    }

    GuestAgentClient client() {
        return client;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(vmm.pid(), Map.of(START_TIME, vmm.startTime()));
    }

    @Override
    public boolean alive() {
        return vmm.isRunning();
    }

    @Override
    public String reason() {
        return alive() ? null : "its Firecracker process (pid " + vmm.pid() + ") exited";
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    /** The workspace disk, mounted by the guest's /init. */
    @Override
    public String workspace() {
        return "/work";
    }

    @Override
    public void close() {
        client.close();
    }
}
