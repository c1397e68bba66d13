package io.vivarium.guestagent;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** The real built agent listening on a Unix socket in a temporary directory. */
final class AgentProcess implements AutoCloseable {
    private final Process process;
    private final Path socket;
    private final List<AgentConnection> connections = new ArrayList<>();

    private AgentProcess(Process process, Path socket) {
        this.process = process;
        this.socket = socket;
    }

    static Path binary() {
        Path p = Path.of(System.getProperty("agent.binary", "target/vivarium-agent"));
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException("the agent binary is not built: " + p + " (run mvn generate-resources)");
        }
        return p;
    }

    static AgentProcess start(Path dir, String... options) throws Exception {
        return start(dir, List.of(), options);
    }

    /** The agent started by a wrapper command (such as bwrap and its options, ending in "--"). */
    static AgentProcess start(Path dir, List<String> wrapper, String... options) throws Exception {
        Path socket = dir.resolve("agent.sock");
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(List.of(binary().toString(), "--listen", "unix:" + socket));
        command.addAll(List.of(options));
        Process p = new ProcessBuilder(command)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        AgentProcess agent = new AgentProcess(p, socket);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            if (!p.isAlive()) {
                throw new IllegalStateException("the agent exited with " + p.exitValue());
            }
            try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                probe.connect(UnixDomainSocketAddress.of(socket));
                return agent;
            } catch (IOException notYet) {
                if (System.nanoTime() > deadline) {
                    agent.close();
                    throw new IllegalStateException("the agent did not listen on " + socket + " within 10 s", notYet);
                }
                AgentProcess.pause();
            }
        }
    }

    /** A short pause between two checks of a condition that has a deadline (spares the CPU). */
    static void pause() {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
    }

    AgentConnection connect() throws IOException {
        AgentConnection c = AgentConnection.open(socket);
        connections.add(c);
        return c;
    }

    Path socket() {
        return socket;
    }

    long pid() {
        return process.pid();
    }

    Process process() {
        return process;
    }

    @Override
    public void close() throws Exception {
        for (AgentConnection c : connections) {
            c.close();
        }
        List<ProcessHandle> tree = process.descendants().toList();
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        tree.forEach(ProcessHandle::destroyForcibly); // what a wrapper or a failed test left behind
    }
}
