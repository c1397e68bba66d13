package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** vivarium-eval: the warm interpreter the agent starts on first use and supervises. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentEvalTest {
    @TempDir
    Path dir;
    AgentProcess agent;
    AgentConnection conn;

    @BeforeAll
    static void needsPython() {
        assumeTrue(Stream.of("/usr/local/bin", "/usr/bin", "/bin").anyMatch(d -> Files.isExecutable(Path.of(d, "python3"))),
                "no python3 in /usr/local/bin, /usr/bin or /bin: the interpreter cannot start on this host");
    }

    @BeforeEach
    void start() throws Exception {
        agent = AgentProcess.start(dir);
        conn = agent.connect();
    }

    @AfterEach
    void stop() throws Exception {
        agent.close();
    }

    JsonNode eval(String code) throws IOException {
        return conn.ok("vivarium-eval", Map.of("code", code));
    }

    @Test
    void stateLivesInOneNamespaceAndTheResultIsTheReprOfTheLastExpression() throws IOException {
        JsonNode first = eval("x = 41");
        assertTrue(first.get("result").isNull(), first.toString());
        assertEquals(0, first.get("exit-code").asInt());
        assertTrue(first.get("fresh").asBoolean(), "the first eval starts the interpreter: " + first);
        JsonNode second = eval("x + 1");
        assertEquals("42", second.get("result").asText());
        assertFalse(second.get("fresh").asBoolean(), "the second runs where the first did: " + second);
        assertTrue(second.get("error").isNull());
        assertEquals("'a'", eval("'a'").get("result").asText(), "repr, not str");
        assertTrue(eval("None").get("result").isNull(), "None is no result, as in a REPL");
        assertEquals(Map.of("result", "[1, 2]", "exit-code", 0), Map.of("result", eval("y = [1]\ny.append(2)\ny").get("result").asText(),
                "exit-code", 0));
    }

    @Test
    void printedOutputIsCapturedAndCapped() throws IOException {
        JsonNode small = eval("print('hello')\nimport sys\nprint('warn', file=sys.stderr)");
        assertEquals("hello\nwarn\n", small.get("stdout").asText());
        assertFalse(small.get("stdout-truncated").asBoolean());
        JsonNode big = eval("print('a' * (3 << 20))\n7");
        assertEquals(1 << 20, big.get("stdout").asText().length());
        assertTrue(big.get("stdout-truncated").asBoolean());
        assertEquals("7", big.get("result").asText(), "the cap keeps the eval going");
        assertEquals("", eval("1").get("stdout").asText(), "output is per eval");
    }

    @Test
    void anExceptionIsAnErrorWithItsTracebackNotAProtocolError() throws IOException {
        eval("def boom():\n    raise ValueError('bad value')");
        JsonNode r = eval("print('before')\nboom()");
        assertEquals(1, r.get("exit-code").asInt());
        assertTrue(r.get("result").isNull());
        String error = r.get("error").asText();
        assertTrue(error.startsWith("Traceback (most recent call last):"), error);
        assertTrue(error.contains("in boom") && error.endsWith("ValueError: bad value\n"), error);
        assertFalse(error.contains("evaldriver") || error.contains("<string>"), "the driver's frames are left out: " + error);
        assertEquals("before\n", r.get("stdout").asText());
        JsonNode syntax = eval("def f(:");
        assertTrue(syntax.get("error").asText().contains("SyntaxError"), syntax.toString());
        JsonNode exit = eval("import sys\nsys.exit(3)");
        assertTrue(exit.get("error").asText().contains("SystemExit: 3"), exit.toString());
        assertEquals("42", eval("6 * 7").get("result").asText(), "the interpreter lives on after each");
    }

    @Test
    void aRunawayEvalTimesOutAndTheNextEvalWorksInAFreshInterpreter() throws IOException {
        eval("x = 1");
        long pid = eval("import os\nos.getpid()").get("result").asLong();
        long child = eval("import subprocess\np = subprocess.Popen(['sleep', '600'])\np.pid").get("result").asLong();
        JsonNode r = conn.ok("vivarium-eval", Map.of("code", "while True: pass", "timeout-ms", 300));
        assertTrue(r.get("timed-out").asBoolean(), r.toString());
        assertEquals(124, r.get("exit-code").asInt());
        assertTrue(r.get("error").asText().contains("state (variables, imports) is gone"), r.toString());
        awaitGone(pid);
        awaitGone(child); // the whole process group was killed
        assertFalse(r.get("fresh").asBoolean(), "the timed-out eval ran in the used interpreter");
        JsonNode next = eval("'x' in globals()");
        assertEquals("False", next.get("result").asText(), "fresh state: " + next);
        assertTrue(next.get("fresh").asBoolean(), "the first eval in the replacement says so: " + next);
        assertNotEquals(pid, eval("__import__('os').getpid()").get("result").asLong());
    }

    @Test
    void anInterpreterThatDiesIsReportedAndReplaced() throws IOException {
        eval("x = 1");
        JsonNode r = eval("import os\nos._exit(5)");
        assertEquals(5, r.get("exit-code").asInt());
        assertTrue(r.get("error").asText().contains("exited with status 5"), r.toString());
        assertEquals("False", eval("'x' in globals()").get("result").asText());
        JsonNode closed = eval("import os, time\nos.close(4)\ntime.sleep(30)");
        assertEquals(137, closed.get("exit-code").asInt(), closed.toString());
        assertTrue(closed.get("error").asText().contains("closed its pipes to the agent"), closed.toString());
        JsonNode forged = eval("import os\nos.write(4, b'\\0\\0\\0\\2{}')");
        assertTrue(forged.get("error").asText().contains("broke the eval protocol"), forged.toString());
        assertEquals("2", eval("1 + 1").get("result").asText());
    }

    @Test
    void pingAndExecAreServedWhileAnEvalRunsAndASecondEvalIsRefused() throws Exception {
        long id = conn.send("vivarium-eval", Map.of("code", "import time\ntime.sleep(30)", "timeout-ms", 60000));
        try (AgentConnection other = AgentConnection.open(agent.socket())) {
            awaitRunning(other);
            other.ok("guest-ping", null);
            JsonNode exec = other.ok("vivarium-exec", Map.of("argv", List.of("/bin/echo", "hi"), "wait-ms", 5000));
            assertTrue(exec.get("exited").asBoolean());
            JsonNode busy = other.error("vivarium-eval", Map.of("code", "1"), "LimitExceeded");
            assertTrue(busy.get("desc").asText().contains("one at a time"), busy.toString());
        }
        conn.close();
        try (AgentConnection again = AgentConnection.open(agent.socket())) {
            JsonNode still = again.error("vivarium-eval", Map.of("code", "1"), "LimitExceeded");
            assertTrue(still.get("desc").asText().contains("already running"), "a gone caller's eval runs on to its timeout");
        }
        assertTrue(id > 0);
    }

    @Test
    void guestInfoAndPingReportThePythonVersionOnceKnown() throws IOException {
        assertNull(conn.ok("guest-info", null).get("python-version"), "not before the interpreter started");
        assertTrue(conn.ok("guest-ping", null).get("python-version").isNull(), "ping says so with a null");
        String version = eval("import sys\n'%d.%d.%d' % sys.version_info[:3]").get("result").asText();
        assertEquals(version, "'" + conn.ok("guest-info", null).get("python-version").asText() + "'");
        assertEquals(version, "'" + conn.ok("guest-ping", null).get("python-version").asText() + "'");
    }

    @Test
    void argumentsAreCheckedStrictly() throws IOException {
        conn.error("vivarium-eval", Map.of(), "InvalidParameter");
        conn.error("vivarium-eval", Map.of("code", 1), "InvalidParameter");
        conn.error("vivarium-eval", Map.of("code", "1", "timeout-ms", 0), "InvalidParameter");
        conn.error("vivarium-eval", Map.of("code", "1", "timeout-ms", 86400001), "InvalidParameter");
        conn.error("vivarium-eval", Map.of("code", "1", "timeout", 5), "InvalidParameter");
        conn.error("vivarium-eval", Map.of("code", "x".repeat((1 << 20) + 1)), "InvalidParameter");
        assertEquals("3", eval("1 + 2").get("result").asText(), "nothing was started by a refused request");
    }

    @Test
    void withoutPythonTheErrorIsNotFound() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/bwrap")), "bwrap is not installed");
        agent.close();
        // the agent alone in an empty root (bwrap without a root bind): no python3 anywhere
        String binary = AgentProcess.binary().toAbsolutePath().toString();
        Path run = Files.createDirectory(dir.resolve("run"));
        agent = AgentProcess.start(run, List.of("/usr/bin/bwrap", "--ro-bind", binary, binary, "--bind", run.toString(),
                run.toString(), "--dev", "/dev", "--unshare-pid", "--die-with-parent", "--"));
        conn = agent.connect();
        JsonNode e = conn.error("vivarium-eval", Map.of("code", "1"), "NotFound");
        assertTrue(e.get("desc").asText().contains("no python3"), e.toString());
        conn.ok("guest-ping", null);
    }

    private static void awaitRunning(AgentConnection other) throws IOException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (other.call("vivarium-eval", Map.of("code", "1")).path("error").path("class").asText().isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "the long eval never started");
            AgentProcess.pause();
        }
    }

    private static void awaitGone(long pid) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            assertTrue(System.nanoTime() < deadline, "the timed-out interpreter " + pid + " still runs");
            AgentProcess.pause();
        }
        assertEquals(Optional.empty(), ProcessHandle.of(pid).filter(ProcessHandle::isAlive));
    }
}
