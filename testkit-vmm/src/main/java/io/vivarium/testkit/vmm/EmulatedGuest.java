package io.vivarium.testkit.vmm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A guest for a fake VMM process on hosts without KVM: the real agent as a guest's /init runs it
 * (restarted when it exits), in a bubblewrap sandbox that dies with the fake VMM, with no network,
 * the host read-only and a directory of its own at {@code /work}; reached through a {@link VsockMux}
 * on the VMM's vsock socket, as a real guest's agent on vsock. What it does not emulate is the
 * machine: no kernel, no disk (a workspace file made for it stays unused), no memory size; a pause
 * stops its processes, a shutdown kills them and ends the fake VMM's process. Its "memory" in a
 * snapshot is its {@code /work}, as a tar file, which a restore unpacks before it boots: files are as
 * they were, and no process of before runs on (a real restore keeps them; the checks do not need
 * it). Only for a fake VMM that runs in a process of its own.
 */
public final class EmulatedGuest implements FakeGuest {
    private final Path dir;
    private final Path agentBinary;
    private final int port;
    private Process sandbox;

    /**
     * @param dir the guest's own directory: its {@code /work}, the agent's socket, its console
     * @param agentBinary the agent to run (the kit's {@code AgentBinary})
     * @param port the vsock port the agent is reached on
     */
    public EmulatedGuest(Path dir, Path agentBinary, int port) {
        this.dir = dir;
        this.agentBinary = agentBinary;
        this.port = port;
    }

    /** Starts the guest and binds {@code vsockSocket}, which must be free, as the VMM's vsock device does. */
    @Override
    public void boot(Path vsockSocket) throws IOException {
        Path work = Files.createDirectories(dir.resolve("work"));
        Path socket = dir.resolve("agent.sock");
        String loop = "while :; do \"$0\" --listen \"unix:$1\"; sleep 0.1; done";
        sandbox = new ProcessBuilder(List.of("bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", work.toString(), "/work",
                "--bind", dir.toString(), dir.toString(), "--chdir", "/work", "--", "/bin/sh", "-c", loop,
                agentBinary.toString(), socket.toString()))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("console.log").toFile()))
                .start();
        new VsockMux(vsockSocket, Map.of(port, socket));
    }

    /** {@code /work} as a tar file: the guest is paused, so nothing writes to it meanwhile. */
    @Override
    public void save(Path memory) throws IOException {
        run(List.of("tar", "-C", dir.resolve("work").toString(), "-cf", memory.toString(), "."));
    }

    /** {@code /work} as the tar file {@link #save} wrote left it, then a boot. */
    @Override
    public void restore(Path memory, Path vsockSocket) throws IOException {
        Path work = dir.resolve("work");
        if (Files.exists(work)) {
            run(List.of("rm", "-rf", "--", work.toString()));
        }
        Files.createDirectories(work);
        run(List.of("tar", "-C", work.toString(), "-xf", memory.toString()));
        boot(vsockSocket);
    }

    /** SIGSTOP to every process of the guest: its agent answers nothing until {@link #resume}. */
    @Override
    public void pause() throws IOException {
        signal("-STOP");
    }

    @Override
    public void resume() throws IOException {
        signal("-CONT");
    }

    /** Kills the guest, and ends this fake VMM process a moment later (once its answer is sent), as a VMM ends with its guest. */
    @Override
    public void shutdown() throws IOException {
        signal("-KILL");
        Thread exit = new Thread(() -> {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
            Runtime.getRuntime().halt(0);
        }, "fake VMM exit");
        exit.setDaemon(true);
        exit.start();
    }

    private void signal(String signal) throws IOException {
        List<String> kill = new ArrayList<>(List.of("kill", signal, Long.toString(sandbox.pid())));
        sandbox.descendants().forEach(p -> kill.add(Long.toString(p.pid())));
        run(kill);
    }

    private static void run(List<String> command) throws IOException {
        try {
            if (new ProcessBuilder(command).inheritIO().start().waitFor() != 0) {
                throw new IOException(String.join(" ", command) + " failed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
