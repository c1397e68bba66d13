package com.example.vivarium.echo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.kit.guest.ClientGuestChannel;
import io.vivarium.kit.guest.GuestAgentClient;

/**
 * A running example-local sandbox, created or adopted: its agent (a host process, named by pid and
 * start time) and the workspace the agent runs commands in. The guest channel is the kit's, over
 * the agent's Unix socket. {@link #close()} lets go of it (this revision's connections to the
 * agent); the agent runs on for the next revision to adopt.
 */
final class LocalInstance implements SandboxInstance, AutoCloseable {

    /** The key of {@link InstanceState#data()} that holds the agent's start time; its pid is {@link InstanceState#pid()}. */
    static final String START_TIME = "start_time";
    /** Past a command's own timeout, how long the agent has to report it (it kills the group at the timeout). */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);

    private final String id;
    private final Path work;
    private final HostProcess agent;
    private final GuestAgentClient client;
    private final ClientGuestChannel channel;

    LocalInstance(String id, Path work, HostProcess agent, GuestAgentClient client) {
        this.id = id;
        this.work = work;
        this.agent = agent;
        this.client = client;
        this.channel = new ClientGuestChannel(id, client, this::alive, EXEC_ANSWER_GRACE);
    }

    /** The agent a state records; empty for a state without one (a create the daemon did not see finish). */
    static Optional<HostProcess> agentOf(InstanceState state) {
        String start = state.data().get(START_TIME);
        return state.pid() > 0 && start != null ? Optional.of(new HostProcess(state.pid(), start)) : Optional.empty();
    }

    HostProcess agent() {
        return agent;
    }

    GuestAgentClient client() {
        return client;
    }

    /** The workspace on the host, the agent's working directory. */
    Path work() {
        return work;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(agent.pid(), Map.of(START_TIME, agent.startTime()));
    }

    /** One read of {@code /proc/PID/stat}: cheap enough for every request. */
    @Override
    public boolean alive() {
        return agent.isRunning();
    }

    @Override
    public String reason() {
        return alive() ? null : "its agent (pid " + agent.pid() + ") exited";
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    /** No namespaces, so no {@code /work}: the workspace is where it is on the host. */
    @Override
    public String workspace() {
        return work.toString();
    }

    /** Core lists and fingerprints the workspace on the host, as the daemon's user (whose commands these are). */
    @Override
    public Optional<HostFiles> hostFiles() {
        try {
            int uid = (Integer) Files.getAttribute(work, "unix:uid");
            int gid = (Integer) Files.getAttribute(work, "unix:gid");
            return Optional.of(new HostFiles(work, work.toString(), uid, gid));
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    @Override
    public void close() {
        client.close();
    }
}
