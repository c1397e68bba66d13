package com.example.vivarium.echo;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;

/**
 * How an example-local sandbox starts and ends, for create and fork alike. It starts the kit's
 * agent binary in the agent's own launch mode, {@code vivarium-agent --launch --detach PIDFILE
 * INFOFILE "" "" WORKDIR "" -- vivarium-agent --listen unix:SOCKET}: the launch forks, returns at
 * once and, in a session of its own (so the agent outlives the daemon), writes its pid and execs
 * the agent, which keeps that pid. The empty arguments skip the launch's steps that only procbox
 * needs (a workspace image, a walk view); the agent runs without {@code --user}, so as the daemon's
 * user, in the workspace. The sandbox is up once the agent answers a ping on its socket.
 *
 * <p>Files in the sandbox's directory ({@code spec.dir()}, core's): {@value #WORK}/ (the workspace),
 * {@value #SOCKET}, {@value #PID_FILE} and {@value #LOG} (the agent's stdout and stderr). The
 * socket's path must fit a Unix socket address (107 bytes); past that the agent refuses to start and
 * the create says so with the agent's words (procbox and gVisor reach theirs through short paths).
 */
final class LocalLauncher {

    static final String WORK = "work";
    static final String SOCKET = "agent.sock";
    static final String PID_FILE = "agent.pid";
    static final String LOG = "agent.log";

    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration PING_WAIT = Duration.ofMillis(500);
    private static final long POLL_MILLIS = 5;
    private static final int LOG_TAIL_BYTES = 2048;
    /** The agent's own environment (each exec gets exactly the one core sends): none of the daemon's. */
    private static final String PATH = "/usr/local/bin:/usr/bin:/bin";

    /** The host's agent binary, or null when it could not be written (then availability says why). */
    private final Path agentBinary;

    LocalLauncher(Path agentBinary) {
        this.agentBinary = agentBinary;
    }

    static Path work(Path dir) {
        return dir.resolve(WORK);
    }

    static Path socket(Path dir) {
        return dir.resolve(SOCKET);
    }

    /** The sandbox {@code spec} whose agent runs: a client of its socket, which connects on the first call. */
    LocalInstance attach(InstanceSpec spec, HostProcess agent) {
        return new LocalInstance(spec.id(), work(spec.dir()), agent, GuestAgentClient.unixSocket(socket(spec.dir())));
    }

    /**
     * Starts the agent of the sandbox {@code spec} in its workspace, which must exist, and waits
     * until it answers. On any failure it ends what it started and removes its files, and throws
     * with the agent's last words.
     */
    LocalInstance start(InstanceSpec spec, OperationContext context) {
        if (agentBinary == null) {
            throw new ApiException(503, "example-local could not write its agent binary: GET /v1/backends says why");
        }
        Path dir = spec.dir();
        String agent = agentBinary.toString();
        ProcessBuilder launch = new ProcessBuilder(agent, "--launch", "--detach", dir.resolve(PID_FILE).toString(),
                "/dev/null", "", "", work(dir).toString(), "", "--", agent, "--listen", "unix:" + socket(dir))
                .directory(work(dir).toFile())
                .redirectInput(Redirect.from(new File("/dev/null")))
                .redirectOutput(Redirect.appendTo(dir.resolve(LOG).toFile()))
                .redirectErrorStream(true);
        launch.environment().clear();
        launch.environment().put("PATH", PATH);
        try {
            context.checkpoint("starting the agent of sandbox " + spec.id());
            Files.deleteIfExists(dir.resolve(PID_FILE));
            Files.deleteIfExists(socket(dir));
            int status = launch.start().waitFor();
            if (status != 0) {
                throw failure(spec, "its launch exited with status " + status);
            }
            long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
            HostProcess started = awaitPid(spec, deadline, context);
            LocalInstance instance = attach(spec, started);
            try {
                awaitPing(spec, started, instance.client(), deadline, context);
            } catch (RuntimeException e) {
                instance.close();
                throw e;
            }
            return instance;
        } catch (IOException e) {
            abandon(spec);
            throw ApiException.internal("cannot start the agent of sandbox " + spec.id() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abandon(spec);
            throw ApiException.internal("interrupted while starting sandbox " + spec.id(), e);
        } catch (RuntimeException e) {
            abandon(spec);
            throw e;
        }
    }

    /** The launch writes the pid file just after it forks, before it execs the agent with that pid. */
    private HostProcess awaitPid(InstanceSpec spec, long deadline, OperationContext context) {
        while (true) {
            Optional<Long> pid = readPid(spec.dir());
            if (pid.isPresent()) {
                return HostProcess.find(pid.get()).orElseThrow(() -> failure(spec, "its agent exited right after start"));
            }
            pause(spec, deadline, context, "its launch wrote no pid");
        }
    }

    /** The agent binds its socket before it serves; until it answers, each ping fails fast. */
    private void awaitPing(InstanceSpec spec, HostProcess agent, GuestAgentClient client, long deadline,
            OperationContext context) {
        String last = "its socket " + socket(spec.dir()) + " never appeared";
        while (true) {
            if (!agent.isRunning()) {
                throw failure(spec, "its agent exited");
            }
            if (Files.exists(socket(spec.dir()))) {
                try {
                    client.ping(Deadline.after(PING_WAIT));
                    return;
                } catch (GuestAgentException e) {
                    last = e.getMessage();
                }
            }
            pause(spec, deadline, context, "its agent did not answer (" + last + ")");
        }
    }

    private void pause(InstanceSpec spec, long deadline, OperationContext context, String what) {
        if (System.nanoTime() > deadline) {
            throw failure(spec, what + " within " + START_TIMEOUT.toSeconds() + " s");
        }
        context.checkpoint("waiting for the agent of sandbox " + spec.id());
        try {
            Thread.sleep(POLL_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.internal("interrupted while starting sandbox " + spec.id(), e);
        }
    }

    /** A 500 that says what went wrong, with the end of the agent's log (read before {@link #abandon} removes it). */
    private static ApiException failure(InstanceSpec spec, String what) {
        return new ApiException(500, "sandbox " + spec.id() + " did not start: " + what + "; the agent said: "
                + logTail(spec.dir().resolve(LOG)));
    }

    private void abandon(InstanceSpec spec) {
        try {
            end(spec, new InstanceState(0, Map.of()));
            Files.deleteIfExists(spec.dir().resolve(LOG));
        } catch (IOException | RuntimeException e) {
            // the caller reports the start's failure; core's destroy (with an empty state) tries this again
        }
    }

    /**
     * Ends the agent of the sandbox {@code spec} and every process below it, and waits for them;
     * idempotent. The agent is the one {@code state} records or, for an empty state (the daemon died
     * during the create), the one the pid file names, if that pid still runs this sandbox's agent
     * (its command line names this sandbox's socket): never a process that took a dead agent's pid.
     * The workspace is left to core, which removes the directory.
     */
    void end(InstanceSpec spec, InstanceState state) {
        Path dir = spec.dir();
        Optional<HostProcess> agent = LocalInstance.agentOf(state).or(() -> launchedIn(dir));
        if (agent.isPresent() && !agent.get().killTree(STOP_TIMEOUT)) {
            throw new ApiException(500, "the agent of sandbox " + spec.id() + " (pid " + agent.get().pid()
                    + ") or a process below it is still there " + STOP_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
        try {
            Files.deleteIfExists(socket(dir));
            Files.deleteIfExists(dir.resolve(PID_FILE));
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the agent's files in " + dir + ": " + e.getMessage(), e);
        }
    }

    private static Optional<HostProcess> launchedIn(Path dir) {
        String listen = "unix:" + socket(dir);
        return readPid(dir).flatMap(HostProcess::find).filter(p -> p.commandLine().contains(listen));
    }

    private static Optional<Long> readPid(Path dir) {
        try {
            return Optional.of(Long.parseLong(Files.readString(dir.resolve(PID_FILE), UTF_8).strip()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty(); // not yet written, or written half
        }
    }

    private static String logTail(Path log) {
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            long from = Math.max(0, file.length() - LOG_TAIL_BYTES);
            byte[] tail = new byte[(int) (file.length() - from)];
            file.seek(from);
            file.readFully(tail);
            String text = new String(tail, UTF_8).strip();
            return text.isEmpty() ? "nothing" : text;
        } catch (IOException e) {
            return "nothing (" + e.getMessage() + ")";
        }
    }
}
