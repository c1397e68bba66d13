package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.AttachedVolume;
import io.vivarium.api.ApiException;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** Starts a detached sandbox and waits until its agent answers. */
final class SandboxLauncher implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(5);
    private static final long POLL_MILLIS = 2;
    private static final int LOG_TAIL_BYTES = 4096;
    /** Bounds one readiness ping: the agent's socket is bound before the ping, so it answers at once or is stuck. */
    private static final Duration PING_WAIT = Duration.ofMillis(500);

    /** What a launch calls itself ({@code guest-agent/src/launch.c}) until it execs bwrap. */
    private static final String LAUNCH_NAME = "vivarium-launch";
    private static final String BWRAP_NAME = "bwrap";

    private final SandboxCommands commands;
    private final LaunchServer server;

    SandboxLauncher(SandboxCommands commands) {
        this.commands = commands;
        this.server = new LaunchServer(commands.agentBinary());
    }

    /**
     * @param dir the sandbox's private directory, which gets the launch files
     * @param cgroups the cgroups to start in
     * @param walkView where the launch binds {@code workDir} for the daemon's walks, or null for none
     * @param image the workspace image to mount at {@code workDir}, or null to bind {@code workDir} as it is
     * @param agentDir the sandbox's agent directory on the host, where its agent binds its socket
     * @param volumes the volumes core made ready for it, bound where they are asked for
     * @param rootfs the root file system it runs on (a template's image), or null for the host's
     * @return the init, and a client of its agent that answered a ping
     * @throws ApiException 500 with bubblewrap's and the agent's output if the sandbox did not come up
     */
    Started launch(String sandboxId, Path dir, Path workDir, Path walkView, List<Path> cgroups, WorkspaceImage image,
            Path agentDir, int uid, int gid, boolean userNamespace, List<AttachedVolume> volumes, Path rootfs) {
        LaunchFiles files = LaunchFiles.in(dir);
        List<String> argv = commands.launch(files, cgroups, image, workDir, walkView, agentDir, sandboxId, uid, gid,
                userNamespace, volumes, rootfs);
        try {
            Files.deleteIfExists(files.pidFile());
            Files.deleteIfExists(files.infoFile());
            // the launch forks the sandbox off and returns at once; the sandbox's processes can read
            // their own environment, and the server gives them none of the daemon's
            int status = server.launch(argv, files.logFile());
            if (status != 0) {
                throw failure(sandboxId, files, "its launch exited with status " + status);
            }
        } catch (IOException e) {
            killLaunch(files);
            throw ApiException.internal("cannot launch sandbox " + sandboxId + ": " + e.getMessage(), e);
        }
        return awaitAgent(sandboxId, files);
    }

    /** Ends the launch server; sandboxes launched run on. */
    @Override
    public void close() {
        server.close();
    }

    /** A sandbox whose agent answered, where the daemon reaches its socket, and the client that did. */
    record Started(InitProcess init, Path socket, GuestAgentClient agent) {
    }

    /**
     * bwrap reports the init's pid as soon as it has cloned it, before it has built the sandbox's
     * root; the sandbox is ready once the agent it runs has bound its socket and answers a ping.
     */
    private Started awaitAgent(String sandboxId, LaunchFiles files) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        InitProcess init = awaitInit(sandboxId, files, deadline);
        Path socket = AgentChannel.socket(init, SandboxCommands.AGENT_SOCKET);
        GuestAgentClient agent = AgentChannel.client(init, socket);
        try {
            awaitPing(sandboxId, files, socket, init, agent, deadline);
            return new Started(init, socket, agent);
        } catch (RuntimeException e) {
            agent.close();
            throw e;
        }
    }

    private InitProcess awaitInit(String sandboxId, LaunchFiles files, long deadline) {
        while (true) {
            Optional<Long> childPid = files.childPid();
            if (childPid.isPresent()) {
                return InitProcess.find(childPid.get())
                        .orElseThrow(() -> failure(sandboxId, files, "its init exited right after start"));
            }
            if (bwrapExited(files)) {
                throw failure(sandboxId, files, "bubblewrap exited");
            }
            pause(sandboxId, files, deadline, null);
        }
    }

    private void awaitPing(String sandboxId, LaunchFiles files, Path socket, InitProcess init, GuestAgentClient agent,
            long deadline) {
        GuestAgentException lastPing = null;
        while (true) {
            // bwrap reports its init before it has switched to the sandbox's root: until the agent
            // runs, the socket's path through /proc/<init>/root could resolve on the host. The stat
            // comes first, as the cheaper look (the agent's is three reads in /proc): children launched
            // side by side poll on the same two cores their launches need
            if (Files.exists(socket) && agentRuns(init)) {
                try {
                    agent.ping(Deadline.after(PING_WAIT));
                    return;
                } catch (GuestAgentException e) {
                    lastPing = e;
                }
            }
            // the cheap look (InitProcess.runs): this loop polls every few ms, and under a burst of
            // creates reading /proc/PID/stat here was a sixth of the daemon's CPU for a create
            if (!init.runs()) {
                throw failure(sandboxId, files, "its init exited during setup");
            }
            pause(sandboxId, files, deadline, lastPing);
        }
    }

    /** The agent is the init itself once bwrap has exec'd it ({@code --as-pid-1}), or, in a sandbox an earlier procbox launched, its child. */
    private static boolean agentRuns(InitProcess init) {
        if (isAgent(init.pid())) {
            return true;
        }
        List<Long> children = ProcFs.children(init.pid()).orElseGet(() -> ProcessHandle.of(init.pid()).stream()
                .flatMap(ProcessHandle::children).map(ProcessHandle::pid).toList());
        return children.stream().anyMatch(SandboxLauncher::isAgent);
    }

    private static boolean isAgent(long pid) {
        return named(pid, SandboxCommands.AGENT_NAME);
    }

    /** Whether process {@code pid} runs under {@code name} ({@code /proc/PID/comm}). */
    private static boolean named(long pid, String name) {
        return ProcFs.command(pid).filter(name::equals).isPresent();
    }

    /** Waits a moment before the next look, or abandons the launch once {@code deadline} has passed. */
    private void pause(String sandboxId, LaunchFiles files, long deadline, GuestAgentException lastPing) {
        if (System.nanoTime() > deadline) {
            throw abandon(sandboxId, files, "its agent did not answer within " + START_TIMEOUT.toSeconds() + " s"
                    + (lastPing == null ? "" : " (" + lastPing.getMessage() + ")"));
        }
        if (!Sleep.briefly(POLL_MILLIS)) {
            throw abandon(sandboxId, files, "interrupted while starting");
        }
    }

    private static boolean bwrapExited(LaunchFiles files) {
        return files.bwrapPid().map(pid -> ProcFs.liveStartTime(pid).isEmpty()).orElse(false);
    }

    /** Kills a launch that did not complete, then reports it. */
    private ApiException abandon(String sandboxId, LaunchFiles files, String why) {
        killLaunch(files);
        return failure(sandboxId, files, why);
    }

    /**
     * Kills whatever a launch in {@code dir} left running: used when the daemon died between
     * launching a sandbox and recording it. Only a launch not yet past its exec, bubblewrap processes
     * and an init that has become the agent are touched, so a pid reused since then by something
     * else is left alone.
     */
    void killUnrecorded(Path dir) {
        killLaunch(LaunchFiles.in(dir));
    }

    private void killLaunch(LaunchFiles files) {
        files.childPid().filter(pid -> named(pid, BWRAP_NAME) || isAgent(pid)).flatMap(ProcessHandle::of)
                .ifPresent(ProcessHandle::destroyForcibly);
        // before it execs bwrap, the launch that wrote the pid file goes by its own name
        files.bwrapPid().filter(pid -> named(pid, BWRAP_NAME) || named(pid, LAUNCH_NAME)).flatMap(ProcessHandle::of)
                .ifPresent(ProcessHandle::destroyForcibly);
    }


    private static ApiException failure(String sandboxId, LaunchFiles files, String why) {
        return ApiException.internal(
                "sandbox " + sandboxId + " failed to start (" + why + "): " + logTail(files.logFile()), null);
    }

    private static String logTail(Path log) {
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            long start = Math.max(0, file.length() - LOG_TAIL_BYTES);
            byte[] tail = new byte[(int) (file.length() - start)];
            file.seek(start);
            file.readFully(tail);
            String text = new String(tail, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "no output" : text;
        } catch (IOException e) {
            return "no log: " + e.getMessage();
        }
    }
}
