package io.vivarium.backend.procbox.internal;

import io.vivarium.kit.guest.AgentGuestChannel;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * The way into a sandbox through its guest agent, on the Unix socket the agent listens on. The
 * daemon reaches the socket through the init's root ({@code /proc/PID/root/run/vivarium/agent.sock}),
 * whatever the length of the state directory's path (a socket path has at most 107 bytes); every
 * component of that path below the sandbox's root is read-only or root's, so the sandbox cannot
 * redirect it, and every new connection is dropped before it carries anything if the init is no
 * longer the same process ({@link #client}: its pid may have gone to another). The agent runs everything as the sandbox user, in the sandbox's namespaces and
 * cgroups, and resolves file paths there with that user's rights. Each
 * call takes a connection of its own (a few idle ones are kept, no thread is ever started), so no
 * procbox thread outlives a call, whatever the sandbox's processes keep open. Every call is bounded:
 * an agent that does not answer is a 502, one that went away a 503, never a hung request.
 */
final class AgentChannel extends AgentGuestChannel implements AutoCloseable {

    /** Past the command's own timeout, how long the agent has to report it (it kills the group at the timeout). */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(2);

    private final InitProcess init;
    private final Path socket;
    /** Keeps a few idle connections; closed once this channel is retired and no call uses it. */
    private final GuestAgentClient pooled;
    private final AtomicInteger calls = new AtomicInteger();
    private volatile boolean retired;

    /** Where the daemon finds {@code socket}, a path inside the sandbox with this init. */
    static Path socket(InitProcess init, Path socket) {
        return init.throughRoot(socket);
    }

    /**
     * A client of the agent's socket at {@code socket} (a path through {@code init}'s root, see
     * {@link #socket}) that checks on every new connection, before it sends anything, that the
     * init is still the same process: had the init died and another process taken its pid between
     * the check before a call and the connect, the path would have reached that process's socket.
     */
    static GuestAgentClient client(InitProcess init, Path socket) {
        return GuestAgentClient.unixSocket(socket, () -> {
            if (!init.isRunning()) {
                throw new IllegalStateException("process " + init.pid() + " is no longer the sandbox's init");
            }
        });
    }

    /** @param pooled a {@link #client} of {@code socket} (already connected once, or not) */
    AgentChannel(String sandboxId, InitProcess init, Path socket, GuestAgentClient pooled) {
        super(sandboxId, EXEC_ANSWER_GRACE);
        this.init = init;
        this.socket = socket;
        this.pooled = pooled;
    }

    /** The same agent and connections, for the sandbox the pool handed this one over as. */
    AgentChannel forSandbox(String sandboxId) {
        return new AgentChannel(sandboxId, init, socket, pooled);
    }

    /**
     * {@link InitProcess#runs}: a call over a pooled connection reaches the agent it connected to or
     * fails; a new connection checks in full ({@link #client}) that no other process took the pid.
     */
    @Override
    protected boolean running() {
        return init.runs();
    }

    /**
     * Retires the pooled connections (when the backend revision that made this channel goes):
     * they are closed as soon as no call uses them, and a later call (a request that still holds
     * this instance) connects for itself and closes after.
     */
    @Override
    public void close() {
        retired = true;
        if (calls.get() == 0) {
            pooled.close();
        }
    }

    @Override
    protected <T> T withClient(BiFunction<GuestAgentClient, Deadline, T> call, Deadline deadline) {
        calls.incrementAndGet();
        try {
            if (!retired) {
                return call.apply(pooled, deadline);
            }
        } finally {
            if (calls.decrementAndGet() == 0 && retired) {
                pooled.close();
            }
        }
        try (GuestAgentClient once = client(init, socket)) {
            return call.apply(once, deadline);
        }
    }
}
