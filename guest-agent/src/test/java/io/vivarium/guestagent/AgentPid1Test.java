package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent as PID 1 of its own PID namespace, as it will be as an initramfs's init: it reaps
 * orphans, and guest-shutdown calls reboot(2), which in a child PID namespace ends only that
 * namespace (never the host).
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentPid1Test {
    @TempDir
    Path dir;
    Process unshare;
    AgentConnection conn;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(AgentExecTest.isRoot(), "needs root to create a PID namespace");
        Path tool = Path.of("/usr/bin/unshare");
        assumeTrue(Files.isExecutable(tool), "needs unshare (util-linux)");
        Path socket = dir.resolve("pid1.sock");
        unshare = new ProcessBuilder(tool.toString(), "--pid", "--fork", "--mount-proc", AgentProcess.binary().toString(), "--listen",
                "unix:" + socket).redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (conn == null) {
            assertTrue(unshare.isAlive(), "unshare exited early");
            try {
                conn = AgentConnection.open(socket);
            } catch (IOException notYet) {
                assertTrue(System.nanoTime() < deadline, "the agent did not listen within 10 s");
                AgentProcess.pause();
            }
        }
    }

    @AfterEach
    void stop() throws Exception {
        if (conn != null) {
            conn.close();
        }
        if (unshare != null) {
            unshare.descendants().forEach(ProcessHandle::destroyForcibly);
            unshare.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    String sh(String script) throws IOException {
        JsonNode r = conn.ok("vivarium-exec", Map.of("argv", List.of("/bin/sh", "-c", script), "env",
                Map.of("PATH", "/usr/bin:/bin"), "wait-ms", 10000));
        assertTrue(r.get("exited").asBoolean(), r.toString());
        return new String(Base64.getDecoder().decode(r.get("out-b64").asText()), StandardCharsets.UTF_8);
    }

    @Test
    void asPid1ItReapsOrphans() throws IOException {
        assertEquals("1 vivarium-agent\n", sh("echo 1 $(cat /proc/1/comm)"));
        String orphan = sh("sh -c 'sleep 0.2 >/dev/null 2>&1 & echo $!'").trim();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!sh("test -e /proc/" + orphan + " && echo present || echo gone").equals("gone\n")) {
            assertTrue(System.nanoTime() < deadline, "orphan " + orphan + " was never reaped by PID 1: "
                    + sh("cat /proc/" + orphan + "/status 2>&1 | head -3"));
            AgentProcess.pause();
        }
    }

    @Test
    void guestShutdownAsPid1EndsItsNamespaceWithoutAnswer() throws Exception {
        conn.send("guest-shutdown", Map.of("mode", "halt"));
        assertEquals(null, conn.readLine(), "no response on success");
        assertTrue(unshare.waitFor(20, TimeUnit.SECONDS), "the namespace's init did not end");
    }
}
