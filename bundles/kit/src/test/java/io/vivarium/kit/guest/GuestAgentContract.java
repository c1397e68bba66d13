package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.vivarium.api.EvalResult;

import io.vivarium.kit.guest.AgentCapabilities.Feature;
import io.vivarium.kit.guest.AgentCapabilities.Support;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every peer must do through the client, whatever it is: one subclass per peer (stock qemu-ga,
 * the fake, our agent) supplies a client connected to it. The peer runs on this host, so guest
 * paths are host paths under a temp dir and commands are harmless.
 */
abstract class GuestAgentContract {
    static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "GREETING", "hello there");

    @TempDir
    Path dir;
    GuestAgentClient client;

    /** A client talking to a fresh or running peer; closed after each test. */
    abstract GuestAgentClient connect() throws Exception;

    /** True when the peer is our agent (or behaves as it), false for the stock qemu-ga. */
    abstract boolean extended();

    /** True when the peer hosts the warm interpreter (our real agent). */
    boolean evaluates() {
        return false;
    }

    /** True when the peer walks and fingerprints files itself ({@code vivarium-list}: our real agent). */
    boolean lists() {
        return false;
    }

    @BeforeEach
    void open() throws Exception {
        client = connect();
    }

    @AfterEach
    void closeClient() {
        if (client != null) {
            client.close();
        }
    }

    static Deadline seconds(long seconds) {
        return Deadline.after(Duration.ofSeconds(seconds));
    }

    @Test
    void pingAnswers() {
        Duration latency = client.ping(seconds(5));
        assertTrue(latency.toNanos() > 0);
    }

    @Test
    void peerIsIdentified() {
        PeerInfo peer = client.peer(seconds(5));
        assertEquals(extended(), peer.vivariumAgent(), peer.version());
        assertTrue(peer.supports("guest-ping"));
    }

    @Test
    void capabilitiesSayWhatIsNativeEmulatedOrMissing() {
        AgentCapabilities capabilities = client.capabilities(seconds(5));
        assertEquals(Support.NATIVE, capabilities.support(Feature.EXEC));
        assertEquals(extended() ? Support.NATIVE : Support.EMULATED, capabilities.support(Feature.EXEC_CWD));
        assertEquals(extended() ? Support.NATIVE : Support.EMULATED, capabilities.support(Feature.FILE_WRITE_ATOMIC));
        assertEquals(extended() ? Support.NATIVE : Support.MISSING, capabilities.support(Feature.EXEC_USER));
        assertEquals(evaluates() ? Support.NATIVE : Support.MISSING, capabilities.support(Feature.EVAL));
        assertEquals(lists() ? Support.NATIVE : Support.MISSING, capabilities.support(Feature.LIST));
    }

    @Test
    void evalKeepsStateInOneInterpreterOrIsUnsupported() {
        if (!evaluates()) {
            GuestAgentException e = assertThrows(GuestAgentException.class,
                    () -> client.eval("1 + 1", Duration.ofSeconds(5), seconds(5)));
            assertEquals(501, e.status());
            assertTrue(e.getMessage().startsWith("eval is not supported by the guest agent"), e.getMessage());
            assertEquals(Optional.empty(), client.pythonVersion(seconds(5)), "a peer without eval has no interpreter");
            assertEquals(Optional.empty(), client.pingAndVersion(seconds(5)).pythonVersion(), "nor does its ping name one");
            return;
        }
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no /usr/bin/python3 on this host");
        assertEquals(Optional.empty(), client.pythonVersion(seconds(5)), "no version before an interpreter started");
        assertEquals(Optional.empty(), client.pingAndVersion(seconds(5)).pythonVersion(), "nor in the ping's answer");
        assertEquals(new EvalResult(null, null, 0, "", true), client.eval("x = 41", Duration.ofSeconds(10), seconds(15)));
        String version = client.eval("import platform; platform.python_version()", Duration.ofSeconds(10), seconds(15)).result();
        assertEquals(version, "'" + client.pythonVersion(seconds(5)).orElseThrow() + "'", "the interpreter's version once it ran");
        assertEquals(version, "'" + client.pingAndVersion(seconds(5)).pythonVersion().orElseThrow() + "'",
                "the ping's answer names it too");
        assertEquals(new EvalResult("42", null, 0, "hi\n", false), client.eval("print('hi')\nx + 1", Duration.ofSeconds(10), seconds(15)));
        EvalResult raised = client.eval("1 / 0", Duration.ofSeconds(10), seconds(15));
        assertEquals(1, raised.exitCode());
        assertTrue(raised.error().endsWith("ZeroDivisionError: division by zero\n"), raised.error());
        EvalResult big = client.eval("print('a' * (2 << 20))", Duration.ofSeconds(10), seconds(15));
        assertTrue(big.stdout().endsWith(ExtensionEval.TRUNCATED), "truncation is reported");
        EvalResult runaway = client.eval("while True: pass", Duration.ofMillis(300), seconds(15));
        assertEquals(124, runaway.exitCode());
        assertTrue(runaway.error().contains("state (variables, imports) is gone"), runaway.error());
        assertEquals("False", client.eval("'x' in globals()", Duration.ofSeconds(10), seconds(15)).result());
        assertThrows(IllegalArgumentException.class,
                () -> client.eval("#".repeat((1 << 20) + 1), Duration.ofSeconds(1), seconds(5)));
    }

    @Test
    void listingGivesTheFingerprintModesRecordsOrIsNotOffered() throws Exception {
        Path tree = Files.createDirectories(dir.resolve("tree"));
        Path a = Files.writeString(tree.resolve("a"), "hello\n");
        Path odd = Files.writeString(Files.createDirectories(tree.resolve("sub")).resolve("tab\tand\nnewline"), "x");
        Files.createSymbolicLink(tree.resolve("link"), a);
        Files.createDirectories(tree.resolve("empty"));
        Optional<GuestExecResult> sha = client.list("sha256", List.of(tree.toString()), Duration.ofSeconds(10),
                1 << 20, seconds(15));
        assertEquals(lists(), sha.isPresent());
        assertTrue(client.list("md5", List.of(tree.toString()), Duration.ofSeconds(10), 1 << 20, seconds(15))
                .isEmpty(), "a mode the agent does not know is left to its command");
        if (!lists()) {
            return;
        }
        assertEquals(0, sha.get().exitCode(), text(sha.get().stderr()));
        // the link is no regular file and is not followed; records are NUL-terminated, in any order
        assertEquals(Set.of(
                "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\t" + a,
                "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\t" + odd),
                Set.of(text(sha.get().stdout()).split("\0")));
        GuestExecResult stat = client.list("stat", List.of(a.toString(), dir.resolve("missing").toString()),
                Duration.ofSeconds(10), 1 << 20, seconds(15)).orElseThrow();
        assertEquals("6:" + Files.getLastModifiedTime(a).toInstant().getEpochSecond() + "\t" + a + "\0",
                text(stat.stdout()));
        assertEquals(1, stat.exitCode(), "a path that cannot be walked fails the listing");
        assertTrue(text(stat.stderr()).contains("missing"), text(stat.stderr()));
    }

    @Test
    void execPassesArgvEnvAndStdinAndReturnsTheExitCode() {
        ExecSpec spec = ExecSpec.of("sh", "-c", "printf '%s|%s|' \"$1\" \"$GREETING\"; cat; echo oops >&2; exit 7",
                "sh", "two words; $(no expansion)").withEnv(ENV).withStdin("from stdin".getBytes(StandardCharsets.UTF_8));
        GuestExecResult result = client.exec(spec, seconds(10));
        assertEquals("two words; $(no expansion)|hello there|from stdin", text(result.stdout()));
        assertEquals("oops\n", text(result.stderr()));
        assertEquals(7, result.exitCode());
        assertNull(result.signal());
        assertFalse(result.timedOut());
        assertEquals(7, result.toExecResult().exitCode());
    }

    @Test
    void execRunsInTheWorkingDirectory() throws Exception {
        Path work = Files.createDirectory(dir.resolve("work dir"));
        GuestExecResult result = client.exec(ExecSpec.of("pwd").withEnv(ENV).withCwd(work.toString()), seconds(10));
        assertEquals(work + "\n", text(result.stdout()));
        assertEquals(0, result.exitCode());
    }

    @Test
    void execCapsOutputPerStream() {
        GuestExecResult result = client.exec(ExecSpec.of("sh", "-c", "head -c 5000 /dev/zero; echo e >&2")
                .withEnv(ENV).withMaxOutputBytes(100), seconds(10));
        assertEquals(100, result.stdout().length);
        assertTrue(result.stdoutTruncated());
        assertFalse(result.stderrTruncated());
        assertEquals("e\n", text(result.stderr()));
        assertTrue(result.toExecResult().truncated());
    }

    @Test
    void execTimeoutKillsTheCommand() {
        GuestExecResult result = client.exec(ExecSpec.of("sleep", "30").withEnv(ENV)
                .withTimeout(Duration.ofMillis(300)), seconds(20));
        assertTrue(result.timedOut());
        assertEquals(9, result.signal());
        assertNull(result.exitCode());
        assertEquals(137, result.toExecResult().exitCode());
    }

    @Test
    void execTimeoutKillsTheWholeProcessGroup() {
        GuestExecResult result = client.exec(ExecSpec.of("sh", "-c", "sleep 30 & echo $!; wait").withEnv(ENV)
                .withTimeout(Duration.ofMillis(300)), seconds(20));
        assertTrue(result.timedOut());
        long child = Long.parseLong(text(result.stdout()).strip());
        // the peer runs on this host, so its pids are ours; an orphaned child is reaped by init shortly
        Deadline gone = seconds(10);
        while (alive(child) && !gone.expired()) {
            Thread.onSpinWait();
        }
        assertFalse(alive(child), "the command's child " + child + " outlived the timeout");
    }

    @Test
    void fileWriteThenReadRoundTrips() {
        String path = dir.resolve("note.bin").toString();
        byte[] content = new byte[300_000];
        for (int i = 0; i < content.length; i++) {
            content[i] = (byte) (i * 31);
        }
        client.writeFile(path, content, seconds(10));
        assertArrayEquals(content, readOnTheHost(path), "the peer wrote what was sent");
        assertArrayEquals(content, client.readFile(path, content.length, seconds(10)));
        client.writeFile(path, "replaced".getBytes(StandardCharsets.UTF_8), seconds(10));
        assertEquals("replaced", text(readOnTheHost(path)), "the peer replaced the file");
        assertEquals("replaced", text(client.readFile(path, 100, seconds(10))));
    }

    @Test
    void aFileLargerThanTheLimitIsRefused() {
        String path = dir.resolve("big").toString();
        client.writeFile(path, new byte[1000], seconds(10));
        assertEquals(1000, readOnTheHost(path).length, "the peer wrote the whole file");
        GuestAgentException e = assertThrows(GuestAgentException.class, () -> client.readFile(path, 999, seconds(10)));
        assertEquals(413, e.status());
    }

    @Test
    void aMissingFileIsNotFound() {
        GuestAgentException e = assertThrows(GuestAgentException.class,
                () -> client.readFile(dir.resolve("absent").toString(), 100, seconds(10)));
        assertEquals(404, e.status(), e.getMessage());
    }

    @Test
    void theGuestClockIsRead() {
        long now = System.currentTimeMillis() * 1_000_000L;
        long guest = client.getTime(seconds(5));
        assertTrue(Math.abs(guest - now) < Duration.ofMinutes(1).toNanos(), "guest time " + guest);
    }

    @Test
    void filesystemsAreReportedThawed() {
        assertFalse(client.frozen(seconds(5)));
    }

    @Test
    void whatThePeerLacksIsNotImplemented() {
        assumeFalse(extended(), "our agent has every feature the client offers");
        GuestAgentException e = assertThrows(GuestAgentException.class,
                () -> client.exec(ExecSpec.of("true").withEnv(ENV).withUser(0, 0), seconds(5)));
        assertEquals(501, e.status(), e.getMessage());
    }

    /** The file as the peer, which runs on this host, left it. */
    private static byte[] readOnTheHost(String path) {
        try {
            return Files.readAllBytes(Path.of(path));
        } catch (java.io.IOException e) {
            throw new AssertionError("the peer left no readable " + path, e);
        }
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
