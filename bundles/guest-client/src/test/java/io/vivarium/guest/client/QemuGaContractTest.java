package io.vivarium.guest.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The contract against Debian's stock qemu-ga, run on the host ({@code qemu-ga -m unix-listen}).
 * It runs as root and executes on this host: only harmless commands and temp paths are used; no
 * shutdown, freeze or set-time is ever sent to it.
 */
class QemuGaContractTest extends GuestAgentContract {
    private static final Path QEMU_GA = Path.of("/usr/sbin/qemu-ga");
    private static Path home;
    private static Process agent;

    @BeforeAll
    static void startAgent() throws Exception {
        assumeTrue(Files.isExecutable(QEMU_GA), "/usr/sbin/qemu-ga is missing: apt-get install qemu-guest-agent");
        home = Files.createTempDirectory("qemu-ga-test");
        Path state = Files.createDirectory(home.resolve("state"));
        Path socket = home.resolve("qga.sock");
        agent = new ProcessBuilder(QEMU_GA.toString(), "-m", "unix-listen", "-p", socket.toString(), "-t",
                state.toString()).redirectErrorStream(true).redirectOutput(home.resolve("qemu-ga.log").toFile()).start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!Files.exists(socket)) {
            if (!agent.isAlive() || System.nanoTime() > until) {
                throw new IllegalStateException("qemu-ga did not start: " + Files.readString(home.resolve("qemu-ga.log")));
            }
            Thread.onSpinWait();
        }
    }

    @AfterAll
    static void stopAgent() throws IOException, InterruptedException {
        if (agent != null) {
            agent.destroy();
            agent.waitFor(10, TimeUnit.SECONDS);
        }
        if (home != null) {
            try (var files = Files.walk(home)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }

    @Override
    GuestAgentClient connect() {
        return GuestAgentClient.unixSocket(home.resolve("qga.sock"));
    }

    @Override
    boolean extended() {
        return false;
    }

    @Test
    void anExtensionCommandIsCommandNotFound() {
        assertEquals(false, client.peer(seconds(5)).supports(Commands.EXEC));
        GuestAgentException e = assertThrows(GuestAgentException.class,
                () -> ExtensionExec.run(GuestTransport.unixSocket(home.resolve("qga.sock")), ExecSpec.of("true"),
                        seconds(5)));
        assertEquals(501, e.status());
        assertEquals("CommandNotFound", e.agentErrorClass());
    }
}
