package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * --user: a root supervisor holds the socket (0600, root's) and restarts a worker that runs as
 * the sandbox user, which can kill its own processes (the worker included) but not the
 * supervisor, and cannot reach the socket.
 */
@Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentUserTest {
    static final String USER = "65534:65534";
    static final String NO_CAPS = "0000000000000000";
    static final Path SETPRIV = Path.of("/usr/bin/setpriv");
    static final List<String> AS_USER = List.of(SETPRIV.toString(), "--reuid", "65534", "--regid", "65534", "--clear-groups");
    @TempDir
    Path dir;
    AgentProcess agent;

    @BeforeEach
    void needRoot() throws IOException {
        assumeTrue(AgentExecTest.isRoot(), "needs root: --user starts as root and drops to 65534");
        // The socket's directory as /run/vivarium will be: root's, and others may traverse it.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @AfterEach
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    static String sh(AgentConnection conn, String script) throws IOException {
        JsonNode r = conn.ok("vivarium-exec", Map.of("argv", List.of("/bin/sh", "-c", script), "env", AgentExecTest.PATH, "wait-ms", 10000));
        assertTrue(r.get("exited").asBoolean(), r.toString());
        return AgentExecTest.text(r, "out-b64") + AgentExecTest.text(r, "err-b64");
    }

    /** The supervisor's one child, once it has one. */
    static ProcessHandle worker(ProcessHandle supervisor) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            List<ProcessHandle> children = supervisor.children().toList();
            if (children.size() == 1) {
                return children.get(0);
            }
            assertTrue(System.nanoTime() < deadline, "the supervisor has no single worker: " + children);
            AgentProcess.pause();
        }
    }

    static Map<String, String> status(long pid) throws IOException {
        Map<String, String> m = new HashMap<>();
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            int colon = line.indexOf(':');
            m.put(line.substring(0, colon), line.substring(colon + 1).trim());
        }
        return m;
    }

    /** utime + stime of a process, in clock ticks. */
    static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** A fresh connection to a working agent (ping and exec as the sandbox user), retried until the deadline. */
    AgentConnection working(long seconds) throws IOException {
        return connected(seconds, conn -> assertEquals("65534\n", sh(conn, "id -u")));
    }

    /**
     * A connection that answers a ping and passes {@code check}, retried until the deadline: right
     * after a SIGUSR2 the socket's file is there a moment before the agent listens (ECONNREFUSED).
     */
    private AgentConnection connected(long seconds, ConnectionCheck check) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            AgentConnection conn = null;
            try {
                conn = agent.connect();
                conn.ok("guest-ping", null);
                check.accept(conn);
                return conn;
            } catch (IOException | AssertionError notYet) {
                if (conn != null) {
                    conn.close();
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no working agent within " + seconds + " s", notYet);
                }
                AgentProcess.pause();
            }
        }
    }

    @FunctionalInterface
    private interface ConnectionCheck {
        void accept(AgentConnection conn) throws IOException;
    }

    @Test
    void theSocketIsRootsAloneAndTheSandboxUserCannotConnect() throws Exception {
        Path python = Path.of("/usr/bin/python3");
        assumeTrue(Files.isExecutable(python) && Files.isExecutable(SETPRIV), "needs python3 and setpriv (util-linux)");
        agent = AgentProcess.start(dir, "--user", USER);
        assertEquals(0, Files.getAttribute(agent.socket(), "unix:uid"));
        assertEquals(0600, (Integer) Files.getAttribute(agent.socket(), "unix:mode") & 07777);
        String connect = "import errno, socket, sys\n"
                + "s = socket.socket(socket.AF_UNIX)\n"
                + "try:\n    s.connect(sys.argv[1]); print('connected')\n"
                + "except OSError as e:\n    print(errno.errorcode[e.errno])\n";
        assertEquals("connected", output(List.of(python.toString(), "-c", connect, agent.socket().toString())), "as root");
        assertEquals("EACCES", output(concat(AS_USER, python.toString(), "-c", connect, agent.socket().toString())), "as the sandbox user");
    }

    static List<String> concat(List<String> head, String... tail) {
        List<String> all = new ArrayList<>(head);
        all.addAll(List.of(tail));
        return all;
    }

    static String output(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        return out;
    }

    @Test
    void workerAndExecsRunAsTheUserWithoutCapabilitiesAndCannotTouchTheSupervisor() throws Exception {
        agent = AgentProcess.start(dir, "--user", USER);
        AgentConnection conn = agent.connect();
        assertEquals("65534 65534 65534\n", sh(conn, "echo $(id -u) $(id -g) $(id -G)"));
        assertEquals("CapInh:\t" + NO_CAPS + "\nCapPrm:\t" + NO_CAPS + "\nCapEff:\t" + NO_CAPS + "\nCapBnd:\t" + NO_CAPS
                + "\nCapAmb:\t" + NO_CAPS + "\nNoNewPrivs:\t1\n", sh(conn, "grep -E '^(Cap|NoNewPrivs)' /proc/self/status"));
        Map<String, String> worker = status(worker(agent.process().toHandle()).pid());
        assertEquals("65534\t65534\t65534\t65534", worker.get("Uid"));
        assertEquals("65534\t65534\t65534\t65534", worker.get("Gid"));
        assertEquals("65534", worker.get("Groups"));
        for (String set : List.of("CapPrm", "CapEff", "CapBnd", "CapAmb")) {
            assertEquals(NO_CAPS, worker.get(set), set);
        }
        assertEquals("1", worker.get("NoNewPrivs"));
        long supervisor = agent.pid();
        assertEquals("0\t0\t0\t0", status(supervisor).get("Uid"));
        assertEquals("kill: no\nptrace-read: no\n", sh(conn, "kill -0 " + supervisor + " 2>/dev/null && echo kill: yes || echo kill: no; "
                + "cat /proc/" + supervisor + "/environ >/dev/null 2>&1 && echo ptrace-read: yes || echo ptrace-read: no"));
    }

    /**
     * Without --user (a VM's agent as root, a procbox agent in a user namespace) the sandbox's
     * processes have the agent's uid: not dumpable, the agent is still out of their reach, while
     * its execs (dumpable again after execve) are not.
     */
    @Test
    void withoutUserTheAgentIsOutOfReachOfProcessesOfItsOwnUid() throws Exception {
        assumeTrue(Files.isExecutable(SETPRIV), "needs setpriv (util-linux)");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        agent = AgentProcess.start(dir, AS_USER);
        AgentConnection conn = agent.connect();
        assertEquals("65534\n", sh(conn, "id -u"));
        assertEquals("environ: no\nfd: no\nsibling: yes\n", sh(conn,
                "cat /proc/$PPID/environ >/dev/null 2>&1 && echo environ: yes || echo environ: no; "
                + "ls /proc/$PPID/fd >/dev/null 2>&1 && echo fd: yes || echo fd: no; "
                + "sleep 10 & cat /proc/$!/environ >/dev/null 2>&1 && echo sibling: yes || echo sibling: no; kill $!"));
    }

    @Test
    void killingEveryProcessOfTheUserRestartsTheWorkerOnTheSameSocket() throws Exception {
        Path bwrap = Path.of("/usr/bin/bwrap");
        assumeTrue(Files.isExecutable(bwrap), "needs bubblewrap: kill -9 -1 must stay inside a PID namespace");
        agent = AgentProcess.start(dir, List.of(bwrap.toString(), "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid",
                "--die-with-parent", "--"), "--user", USER);
        ProcessHandle supervisor = agent.process().descendants()
                .filter(p -> p.parent().flatMap(q -> q.info().command()).filter(c -> c.endsWith("bwrap")).isPresent()
                        && p.info().command().filter(c -> c.endsWith("vivarium-agent")).isPresent())
                .findFirst().orElseThrow();
        ProcessHandle first = worker(supervisor);
        Object inode = Files.getAttribute(agent.socket(), "unix:ino");
        AgentConnection conn = agent.connect();
        conn.ok("guest-ping", null);
        conn.send("vivarium-exec", Map.of("argv", List.of("/bin/sh", "-c", "kill -9 -1"), "wait-ms", 10000));
        while (conn.readLine() != null) {
            // the worker may or may not answer before it dies; the connection ends either way
        }
        assertTrue(first.onExit().get(10, TimeUnit.SECONDS) != null && !first.isAlive(), "the worker survived kill -9 -1");
        working(20);
        assertTrue(supervisor.isAlive(), "the supervisor was killed by the sandbox user");
        assertNotEquals(first.pid(), worker(supervisor).pid());
        assertEquals(inode, Files.getAttribute(agent.socket(), "unix:ino"), "the socket was bound again");
    }

    /**
     * SIGUSR1 to the supervisor closes the listener everywhere (gVisor cannot checkpoint a sandbox
     * holding a host socket): the socket's file goes and open connections end; SIGUSR2 binds it
     * again and hands it to the same worker, whose exec'd process runs on.
     */
    @Test
    void sigusr1ReleasesTheSocketAndSigusr2BindsItAgainForTheSameWorker() throws Exception {
        agent = AgentProcess.start(dir, "--user", USER);
        ProcessHandle worker = worker(agent.process().toHandle());
        AgentConnection conn = working(20);
        String bg = sh(conn, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!").strip();

        releaseListeners(conn);

        signal("USR2");
        AgentConnection again = working(20);
        assertEquals(worker.pid(), worker(agent.process().toHandle()).pid(), "the same worker serves");
        assertEquals("alive\n", sh(again, "kill -0 " + bg + " && echo alive"));
    }

    /** The same without a supervisor: the agent itself removes the socket's file on SIGUSR1 (a host waits for that) and binds again on SIGUSR2. */
    @Test
    void withoutASupervisorSigusr1AlsoRemovesTheSocketsFile() throws Exception {
        agent = AgentProcess.start(dir);
        AgentConnection conn = answering(20);
        String bg = sh(conn, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!").strip();

        releaseListeners(conn);

        signal("USR2");
        assertEquals("alive\n", sh(answering(20), "kill -0 " + bg + " && echo alive"));
    }

    /** A connection to an agent that answers a ping (as root: no {@code --user}). */
    private AgentConnection answering(long seconds) throws IOException {
        return connected(seconds, conn -> { });
    }

    /** SIGUSR1, then the socket's file must go and {@code conn}, open before, must end. */
    private void releaseListeners(AgentConnection conn) throws Exception {
        signal("USR1");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Files.exists(agent.socket(), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            assertTrue(System.nanoTime() < deadline, "the socket's file is still there");
            AgentProcess.pause();
        }
        assertEquals(null, conn.readLine(), "an open connection is closed");
    }

    private void signal(String name) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(agent.pid())).inheritIO().start();
        assertTrue(kill.waitFor(30, TimeUnit.SECONDS), "kill -" + name + " ends");
        assertEquals(0, kill.exitValue());
    }

    /**
     * The agent as procbox starts it: bwrap's {@code --cap-drop ALL} and then only what the worker
     * needs to drop to the user; without {@code CAP_KILL} the supervisor cannot signal the worker.
     */
    static List<String> starter(boolean procboxCapabilities) {
        assumeTrue(!procboxCapabilities || Files.isExecutable(SETPRIV), "needs setpriv (util-linux)");
        return procboxCapabilities ? List.of(SETPRIV.toString(), "--bounding-set", "-all,+setuid,+setgid,+setpcap", "--") : List.of();
    }

    @ParameterizedTest(name = "with procbox''s capabilities only: {0}")
    @ValueSource(booleans = {false, true})
    void sigtermStopsTheWorkerAndItsExecsAndExitsZero(boolean procboxCapabilities) throws Exception {
        agent = AgentProcess.start(dir, starter(procboxCapabilities), "--user", USER);
        AgentConnection conn = agent.connect();
        conn.ok("vivarium-exec", Map.of("argv", List.of("sleep", "1000"), "env", AgentExecTest.PATH));
        List<ProcessHandle> tree = agent.process().descendants().toList();
        assertEquals(2, tree.size(), "worker and sleep: " + tree);
        agent.process().destroy();
        assertTrue(agent.process().waitFor(20, TimeUnit.SECONDS), "the supervisor did not exit");
        assertEquals(0, agent.process().exitValue());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (tree.stream().anyMatch(ProcessHandle::isAlive)) {
            assertTrue(System.nanoTime() < deadline, "left behind: " + tree.stream().filter(ProcessHandle::isAlive).toList());
            AgentProcess.pause();
        }
        assertFalse(Files.exists(agent.socket(), LinkOption.NOFOLLOW_LINKS), "the socket was left behind");
    }

    @ParameterizedTest(name = "with procbox''s capabilities only: {0}")
    @ValueSource(booleans = {false, true})
    void sigtermStopsAWorkerThatTheSandboxUserStopped(boolean procboxCapabilities) throws Exception {
        assumeTrue(Files.isExecutable(SETPRIV), "needs setpriv (util-linux)");
        agent = AgentProcess.start(dir, starter(procboxCapabilities), "--user", USER);
        ProcessHandle worker = worker(agent.process().toHandle());
        assertEquals("", output(concat(AS_USER, "kill", "-STOP", Long.toString(worker.pid()))));
        agent.process().destroy();
        assertTrue(agent.process().waitFor(20, TimeUnit.SECONDS), "the supervisor did not exit");
        assertEquals(0, agent.process().exitValue());
        assertTrue(worker.onExit().get(10, TimeUnit.SECONDS) != null && !worker.isAlive(), "the worker was left behind");
    }

    /** A sandbox user who kills the worker in a loop cannot grow the host's log by a line per kill. */
    @Test
    void workerRestartsAreLoggedAtMostFiveTimesAMinute() throws Exception {
        Path log = dir.resolve("agent.log");
        agent = AgentProcess.start(dir, List.of("/bin/sh", "-c", "exec 2>\"$0\" \"$@\"", log.toString()), "--user", USER);
        ProcessHandle supervisor = agent.process().toHandle();
        Set<Long> killed = new HashSet<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (killed.size() < 6) {
            for (ProcessHandle w : supervisor.children().toList()) {
                if (killed.add(w.pid())) {
                    w.destroyForcibly();
                }
            }
            assertTrue(System.nanoTime() < deadline, "only " + killed.size() + " workers were started");
            AgentProcess.pause();
        }
        List<String> lines;
        while ((lines = Files.readAllLines(log)).size() < 6) {
            assertTrue(System.nanoTime() < deadline, "the sixth death was neither logged nor counted: " + lines);
            AgentProcess.pause();
        }
        assertEquals(5, lines.stream().filter(l -> l.contains("restarting in")).count(), lines.toString());
        assertEquals(List.of("vivarium-agent: worker restarts are logged at most 5 times a minute; counting the others"),
                lines.stream().filter(l -> !l.contains("restarting in")).toList());
    }

    @Test
    void aWorkerThatKeepsDyingIsRestartedAtALimitedRateWithoutSpinning() throws Exception {
        agent = AgentProcess.start(dir, "--user", USER);
        ProcessHandle supervisor = agent.process().toHandle();
        Set<Long> workers = new HashSet<>();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
        while (System.nanoTime() < end) {
            for (ProcessHandle w : supervisor.children().toList()) {
                workers.add(w.pid());
                w.destroyForcibly();
            }
            AgentProcess.pause();
        }
        assertTrue(workers.size() >= 3, "the worker was not restarted: " + workers);
        assertTrue(workers.size() <= 10, "more than 10 starts in 6 s: " + workers.size());
        long ticks = cpuTicks(supervisor.pid());
        assertTrue(ticks < 50, "the supervisor used " + ticks + " clock ticks of CPU in 6 s");
        assertTrue(supervisor.isAlive());
        working(20);
    }

    @Test
    void runAsBecomesTheUserForGoodWithoutCapabilitiesThenRunsTheCommandAndRefusesRoot() throws Exception {
        Process p = new ProcessBuilder(AgentProcess.binary().toString(), "--run-as", "1234:2345", "--", "/bin/sh", "-c",
                "id -u; id -g; id -G; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertEquals("1234\n2345\n2345\nCapPrm:\t" + NO_CAPS + "\nCapEff:\t" + NO_CAPS + "\nCapBnd:\t" + NO_CAPS
                + "\nNoNewPrivs:\t1\n", out);

        for (List<String> bad : List.of(List.of("0:0", "--", "id"), List.of("1234:2345", "id"), List.of("x", "--", "id"))) {
            List<String> argv = new ArrayList<>(List.of(AgentProcess.binary().toString(), "--run-as"));
            argv.addAll(bad);
            Process refused = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String said = new String(refused.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(refused.waitFor(20, TimeUnit.SECONDS));
            assertEquals(2, refused.exitValue(), bad + ": " + said);
        }
    }
}
