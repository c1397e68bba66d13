package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.kit.guest.ClientGuestChannel;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A running gVisor container, created or adopted. {@link #close()} lets go of it (a bundle
 * update, a daemon stopping): its pooled agent connections close, the container keeps running.
 * A checkpoint leaves the container in its sandbox process; a restore runs it on in a new one
 * ({@link #restored}): the record and the agent's connections are replaced then. A cold one
 * ({@link GvisorHibernation}) runs nowhere: it is paused and alive, its state in its checkpoint.
 */
final class GvisorInstance implements SandboxInstance, AutoCloseable {

    private static final Duration PING_WAIT = Duration.ofSeconds(1);
    /** Past a command's own timeout, how long the agent has to report it (it kills the group at the timeout). */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);
    private static final long RETRY_MILLIS = 20;

    private final String id;
    private volatile ContainerRecord record;
    private volatile GuestAgentClient agent;
    private volatile ClientGuestChannel channel;
    /** Frozen by {@code runsc pause} until a {@code runsc resume}; runsc keeps it so across daemons ({@link GvisorBackend#adopt}). */
    private volatile boolean paused;
    private final SandboxNetworks.KnownAddress address;

    GvisorInstance(String id, ContainerRecord record, boolean paused) {
        this.id = id;
        this.address = new SandboxNetworks.KnownAddress(id);
        this.paused = paused;
        connect(record);
    }

    private void connect(ContainerRecord now) {
        this.record = now;
        this.agent = GuestAgentClient.unixSocket(now.files().agentSocket(), () -> {
            if (now.cold() != null) {
                throw new IllegalStateException("container " + now.containerId() + " is cold: it runs again once woken");
            }
            if (!now.running()) {
                throw new IllegalStateException("the sandbox process " + now.sandboxPid() + " of container "
                        + now.containerId() + " is gone");
            }
        });
        this.channel = new ClientGuestChannel(id, agent, this::alive, EXEC_ANSWER_GRACE);
    }

    /**
     * Closes the connections to the agent: runsc cannot checkpoint a sandbox that holds a
     * connection from the host (measured: "encoding error at object
     * transport.connectionedEndpoint"). The next call connects again.
     */
    void disconnect() {
        agent.close();
        connect(record);
    }

    /**
     * The container now runs in the sandbox process of {@code now} (a restore), or is cold (a
     * release) or no longer (a wake): new connections to its agent.
     */
    void restored(ContainerRecord now) {
        GuestAgentClient old = agent;
        connect(now);
        old.close();
    }

    ContainerRecord record() {
        return record;
    }

    /** Waits until the agent answers; fails with runsc's last words if the container goes or time runs out. */
    void awaitAgent(Instant deadline, OperationContext context) throws IOException {
        ContainerRecord record = this.record;
        GuestAgentClient agent = this.agent;
        GuestAgentException last = null;
        while (true) {
            if (!alive()) {
                throw new IOException("the container exited before its agent answered: " + record.files().logTail());
            }
            context.checkpoint("waiting for the guest agent");
            Duration left = Duration.between(Instant.now(), deadline);
            if (left.isNegative() || left.isZero()) {
                throw new IOException("the agent did not answer in time" + (last == null ? "" : " (" + last.getMessage() + ")")
                        + "; runsc's last words: " + record.files().logTail());
            }
            try {
                agent.ping(Deadline.after(left.compareTo(PING_WAIT) < 0 ? left : PING_WAIT));
                return;
            } catch (GuestAgentException e) {
                last = e;
            }
            try {
                // the socket appears once the agent has bound it, a few milliseconds after runsc returns
                Thread.sleep(RETRY_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for the guest agent", e);
            }
        }
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(record.sandboxPid(), record.toData());
    }

    @Override
    public boolean alive() {
        return record.cold() != null || record.running();
    }

    @Override
    public SandboxStatus status() {
        if (!alive()) {
            return SandboxStatus.FAILED;
        }
        return paused ? SandboxStatus.PAUSED : SandboxStatus.RUNNING;
    }

    void paused(boolean value) {
        paused = value;
    }

    @Override
    public String reason() {
        if (record.cold() != null) {
            return "cold: its state is on disk and its memory freed; its next request starts it again";
        }
        return alive() ? null : "the gVisor sandbox (pid " + record.sandboxPid() + ") of container "
                + record.containerId() + " exited; runsc's last words: " + record.files().logTail();
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    @Override
    public String workspace() {
        return OciSpec.WORKSPACE;
    }

    /** The workspace on the host, owned by the sandbox user as the container's processes see it. */
    @Override
    public Optional<HostFiles> hostFiles() {
        return Optional.of(new HostFiles(record.files().workspace(), OciSpec.WORKSPACE, record.uid(), record.gid()));
    }

    @Override
    public void close() {
        agent.close();
    }

    @Override
    public Optional<String> networkAddress() {
        return address.get();
    }
}
