package io.vivarium.backend.firecracker.internal;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.testkit.vmm.VsockMux;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The guest of {@link FakeFirecrackerProcess}, for hosts without KVM: the real agent as a guest's
 * /init runs it (restarted when it exits), in a bubblewrap sandbox that dies with the fake VMM, with
 * no network, the host read-only and a directory of its own at {@code /work}; reached through a
 * {@link VsockMux} on the VMM's vsock socket, on port {@value FirecrackerLauncher#AGENT_PORT}, as a
 * real guest's agent on vsock. What it does not emulate is the machine: no kernel, no disk (the
 * workspace file the backend made stays unused), no memory size.
 */
final class EmulatedGuest implements FirecrackerRules.Guest {
    private final Path dir;

    /** @param dir the guest's own directory: its {@code /work} and the agent's socket */
    EmulatedGuest(Path dir) {
        this.dir = dir;
    }

    /** The agent's Unix socket, whose path names this guest's agent among the host's processes. */
    static Path agentSocket(Path dir) {
        return dir.resolve("agent.sock");
    }

    @Override
    public void boot(Path vsockSocket) throws IOException {
        Path work = Files.createDirectories(dir.resolve("work"));
        Path agent = AgentBinary.install(Files.createDirectories(dir.resolve("bin")));
        String loop = "while :; do \"$0\" --listen \"unix:$1\"; sleep 0.1; done";
        new ProcessBuilder(List.of("bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", work.toString(), "/work",
                "--bind", dir.toString(), dir.toString(), "--chdir", "/work", "--", "/bin/sh", "-c", loop, agent.toString(),
                agentSocket(dir).toString()))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("console.log").toFile()))
                .start();
        new VsockMux(vsockSocket, Map.of(FirecrackerLauncher.AGENT_PORT, agentSocket(dir)));
    }
}
