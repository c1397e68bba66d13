package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --listen vsock:PORT}, the channel of a Firecracker or Cloud Hypervisor guest. Nothing on
 * a host can connect to its own vsock listener unless the kernel has the loopback transport, so
 * this checks what a host can: the port is bound while the agent runs (a second bind of it is
 * refused) and free once it stopped, and a malformed port is refused at start. Python makes the
 * vsock sockets (Java has none).
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentVsockTest {
    @TempDir
    Path dir;

    @Test
    void aVsockPortIsBoundWhileTheAgentRunsAndFreedWhenItStops() throws Exception {
        String none = vsockMissing();
        assumeTrue(none == null, none);
        int port = ThreadLocalRandom.current().nextInt(20_000, 60_000);
        try (AgentProcess agent = AgentProcess.start(dir, "--listen", "vsock:" + port);
                AgentConnection connection = agent.connect()) {
            connection.ok("guest-ping", null); // it serves its other listener: it started with both
            assertEquals("in use", bind(port), "the agent holds vsock port " + port);
        }
        assertEquals("free", bind(port), "and lets it go when it stops");
    }

    @Test
    void underUserTheSupervisorBindsItAndLetsItGo() throws Exception {
        String none = vsockMissing();
        assumeTrue(none == null, none);
        assumeTrue("root".equals(System.getProperty("user.name")), "--user needs the agent to start as root");
        int port = ThreadLocalRandom.current().nextInt(20_000, 60_000);
        try (AgentProcess agent = AgentProcess.start(dir, "--user", "65534:65534", "--listen", "vsock:" + port);
                AgentConnection connection = agent.connect()) {
            connection.ok("guest-ping", null);
            assertEquals("in use", bind(port), "the supervisor holds vsock port " + port);
        }
        assertEquals("free", bind(port));
    }

    @Test
    void aPortThatIsNoNumberIsRefusedAtStart() throws Exception {
        for (String spec : new String[] {"vsock:", "vsock:http", "vsock:0", "vsock:4294967295"}) {
            Process p = new ProcessBuilder(AgentProcess.binary().toString(), "--listen", spec).redirectErrorStream(true).start();
            assertTrue(p.waitFor(10, TimeUnit.SECONDS), spec);
            String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.exitValue() != 0 && said.contains(spec), spec + ": " + p.exitValue() + " " + said);
        }
    }

    /** Null when this host makes vsock sockets, else why not. */
    private static String vsockMissing() throws Exception {
        String answer = python("import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('ok')");
        return answer.equals("ok") ? null : "this host makes no vsock sockets (no vsock transport in its kernel): " + answer;
    }

    /** "in use" when vsock port {@code port} is bound here, "free" when it is not. */
    private static String bind(int port) throws Exception {
        return python("import socket, errno\ns = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\ntry:\n"
                + "    s.bind((socket.VMADDR_CID_ANY, " + port + ")); print('free')\nexcept OSError as e:\n"
                + "    print('in use' if e.errno == errno.EADDRINUSE else e)");
    }

    private static String python(String program) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("python3", "-c", program).redirectErrorStream(true).start();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "python3 answered");
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    }
}
