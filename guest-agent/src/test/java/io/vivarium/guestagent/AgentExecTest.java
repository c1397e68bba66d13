package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Processes: guest-exec and vivarium-exec, streaming, limits, process groups, reaping. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentExecTest {
    static final Map<String, String> PATH = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    @TempDir
    Path dir;
    AgentProcess agent;
    AgentConnection conn;
    final List<Long> strays = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        agent = AgentProcess.start(dir);
        conn = agent.connect();
    }

    @AfterEach
    void stop() throws Exception {
        agent.close();
        for (long pid : strays) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    /** What a process produced over all polls, and its last poll. */
    record Run(String out, String err, JsonNode last, int polls) {}

    static String text(JsonNode n, String field) {
        return new String(Base64.getDecoder().decode(n.get(field).asText()), StandardCharsets.UTF_8);
    }

    Run run(Map<String, Object> args) throws IOException {
        Map<String, Object> a = new HashMap<>(args);
        a.putIfAbsent("wait-ms", 5000);
        JsonNode r = conn.ok("vivarium-exec", a);
        StringBuilder out = new StringBuilder(), err = new StringBuilder();
        int polls = 1;
        while (true) {
            out.append(text(r, "out-b64"));
            err.append(text(r, "err-b64"));
            if (r.get("exited").asBoolean() && r.get("out-b64").asText().isEmpty() && r.get("err-b64").asText().isEmpty()) {
                break;
            }
            if (r.get("exited").asBoolean()) {
                // exited with output left: one more poll returns the rest (or NotFound once freed)
                JsonNode more = conn.call("vivarium-exec-poll", Map.of("handle", r.get("handle").asLong()));
                if (more.has("error")) {
                    assertEquals("NotFound", more.get("error").get("class").asText());
                    break;
                }
                r = more.get("return");
                polls++;
                continue;
            }
            r = conn.ok("vivarium-exec-poll", Map.of("handle", r.get("handle").asLong(), "wait-ms", 5000));
            polls++;
        }
        return new Run(out.toString(), err.toString(), r, polls);
    }

    static Map<String, Object> cmd(String... argv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("argv", List.of(argv));
        m.put("env", PATH);
        return m;
    }

    static Map<String, Object> with(Map<String, Object> m, String k, Object v) {
        m.put(k, v);
        return m;
    }

    static boolean gone(long pid) {
        return !Files.exists(Path.of("/proc/" + pid));
    }

    static String procState(long pid) {
        try {
            return Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream().filter(l -> l.startsWith("State:") || l.startsWith("PPid:"))
                    .toList().toString();
        } catch (IOException e) {
            return "gone";
        }
    }

    static void awaitGone(long pid) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!gone(pid)) {
            assertTrue(System.nanoTime() < deadline, "process " + pid + " is still there: " + procState(pid));
            AgentProcess.pause();
        }
    }

    static long ppid(long pid) throws IOException {
        return Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream().filter(l -> l.startsWith("PPid:"))
                .mapToLong(l -> Long.parseLong(l.substring(5).trim())).findFirst().orElseThrow();
    }

    @Test
    void guestExecReturnsAPidAndStatusCarriesBase64OutputAndExitCode() throws Exception {
        JsonNode started = conn.ok("guest-exec", Map.of("path", "/bin/sh", "arg", List.of("-c", "echo out; echo err >&2; exit 7"),
                "capture-output", true));
        long pid = started.get("pid").asLong();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        JsonNode st;
        while (!(st = conn.ok("guest-exec-status", Map.of("pid", pid))).get("exited").asBoolean()) {
            assertTrue(System.nanoTime() < deadline, "guest-exec never finished");
        }
        assertEquals(7, st.get("exitcode").asInt());
        assertEquals("out\n", text(st, "out-data"));
        assertEquals("err\n", text(st, "err-data"));
        conn.error("guest-exec-status", Map.of("pid", pid), "NotFound");
    }

    @Test
    void vivariumExecAnswersAShortCommandInOneRoundTrip() throws IOException {
        JsonNode r = conn.ok("vivarium-exec", with(cmd("sh", "-c", "printf hello; printf oops >&2; exit 3"), "wait-ms", 10000));
        assertTrue(r.get("exited").asBoolean(), r.toString());
        assertEquals(3, r.get("exit-code").asInt());
        assertEquals("hello", text(r, "out-b64"));
        assertEquals("oops", text(r, "err-b64"));
        assertFalse(r.get("timed-out").asBoolean());
        assertFalse(r.has("signal"));
        assertTrue(r.get("duration-ms").asLong() >= 0);
        conn.error("vivarium-exec-poll", Map.of("handle", r.get("handle").asLong()), "NotFound");
    }

    @Test
    void aCommandGetsEverySignalAtItsDefaultEvenFromAnAgentStartedIgnoringSome() throws Exception {
        agent.close();
        // as under nohup: SIGHUP (and here SIGINT) ignored, which an exec would otherwise inherit
        agent = AgentProcess.start(dir, List.of("sh", "-c", "trap '' HUP INT; exec \"$@\"", "sh"));
        conn = agent.connect();
        Run r = run(cmd("grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"));
        assertEquals("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n", r.out(),
                "no signal ignored or blocked: a terminal's hang-up ends the command");
    }

    @Test
    void argvIsNotInterpretedByAShell() throws IOException {
        Run r = run(cmd("echo", "$HOME", "a;b", "*", "`id`"));
        assertEquals("$HOME a;b * `id`\n", r.out());
    }

    @Test
    void theEnvironmentIsExactlyWhatWasGiven() throws IOException {
        Run r = run(with(cmd("/usr/bin/env"), "env", Map.of("A", "1", "B", "two words", "EMPTY", "")));
        assertEquals(new TreeSet<>(List.of("A=1", "B=two words", "EMPTY=")), new TreeSet<>(Arrays.asList(r.out().split("\n"))));
    }

    @Test
    void argv0IsLookedUpInThePathOfTheCommandsOwnEnvironment() throws IOException {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path tool = bin.resolve("only-here");
        Files.writeString(tool, "#!/bin/sh\necho found \"$0\"\n");
        tool.toFile().setExecutable(true);
        Map<String, Object> inItsPath = with(cmd("only-here"), "env", Map.of("PATH", "/nonexistent:" + bin));
        assertEquals("found " + tool + "\n", run(inItsPath).out());
        assertEquals("NotFound", conn.call("vivarium-exec", cmd("only-here")).get("error").get("class").asText(),
                "not in the agent's PATH either: the command's PATH is the only one searched");

        Path notExecutable = Files.writeString(bin.resolve("not-executable"), "#!/bin/sh\n");
        JsonNode refused = conn.call("vivarium-exec", with(cmd("not-executable"), "env", Map.of("PATH", bin.toString())));
        assertEquals("PermissionDenied", refused.get("error").get("class").asText(), refused.toString());
        assertEquals("PermissionDenied",
                conn.call("vivarium-exec", cmd(notExecutable.toString())).get("error").get("class").asText());

        assertEquals("NotFound", conn.call("guest-exec", Map.of("path", "", "arg", List.of())).get("error").get("class").asText(),
                "an empty name is not found, not searched for as the directories of PATH");
        assertEquals("InvalidParameter", conn.call("vivarium-exec", cmd("x".repeat(300))).get("error").get("class").asText(),
                "a name longer than a file name may be");
        JsonNode first = conn.call("guest-exec", Map.of("path", "only-here", "env", List.of("PATH=" + bin, "PATH=/nonexistent")));
        assertTrue(first.has("return"), "the first PATH of the environment is the one searched: " + first);
    }

    @Test
    void cwdAndStdin() throws IOException {
        Path real = dir.toRealPath();
        assertEquals(real + "\n", run(with(cmd("pwd"), "cwd", real.toString())).out());
        byte[] input = new byte[300_000];
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) ('a' + i % 26);
        }
        Run r = run(with(cmd("cat"), "stdin-b64", Base64.getEncoder().encodeToString(input)));
        assertEquals(new String(input, StandardCharsets.US_ASCII), r.out());
        assertEquals("", run(cmd("cat")).out(), "no stdin is an empty stdin");
        assertEquals("InvalidParameter", conn.call("vivarium-exec", with(cmd("pwd"), "cwd", "relative")).get("error").get("class").asText());
        assertEquals("NotFound", conn.call("vivarium-exec", with(cmd("pwd"), "cwd", dir.resolve("nope").toString())).get("error").get("class").asText());
        assertEquals("NotFound", conn.call("vivarium-exec", cmd("no-such-program-here")).get("error").get("class").asText());
    }

    @Test
    void aTimeoutKillsTheWholeProcessGroup() throws IOException {
        Run r = run(with(cmd("sh", "-c", "sleep 300 & echo $!; wait"), "timeout-ms", 300));
        long grandchild = Long.parseLong(r.out().trim());
        assertTrue(r.last().get("timed-out").asBoolean());
        assertEquals(9, r.last().get("signal").asInt());
        assertFalse(r.last().has("exit-code"));
        awaitGone(grandchild);
    }

    /** A process that calls setsid itself leaves the group: neither timeouts nor exec-kill reach it. */
    @Test
    void aProcessThatCallsSetsidEscapesTheGroup() throws IOException {
        Run r = run(with(cmd("sh", "-c", "setsid sleep 300 & echo $!; wait"), "timeout-ms", 300));
        long escaped = Long.parseLong(r.out().trim());
        strays.add(escaped);
        assertTrue(r.last().get("timed-out").asBoolean());
        assertFalse(gone(escaped), "a setsid'd process survives the group kill");
        assertEquals(agent.pid(), ppid(escaped), "the agent (a subreaper) adopted it");
    }

    @Test
    void execKillSignalsTheGroup() throws IOException {
        JsonNode r = conn.ok("vivarium-exec", cmd("sleep", "300"));
        long h = r.get("handle").asLong();
        assertTrue(conn.ok("vivarium-exec-kill", Map.of("handle", h, "signal", 15)).isObject());
        JsonNode done = conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 10000));
        assertTrue(done.get("exited").asBoolean());
        assertEquals(15, done.get("signal").asInt());
        assertFalse(done.get("timed-out").asBoolean());
    }

    @Test
    void perStreamCapTruncates() throws IOException {
        Run r = run(with(cmd("sh", "-c", "head -c 100000 /dev/zero; printf small >&2"), "max-output-bytes", 1000));
        assertEquals(1000, r.out().length());
        assertTrue(r.last().get("out-truncated").asBoolean());
        assertFalse(r.last().get("err-truncated").asBoolean());
        assertEquals("small", r.err());
        JsonNode once = conn.ok("vivarium-exec", with(with(cmd("head", "-c", "5000", "/dev/zero"), "max-output-bytes", 10), "wait-ms", 10000));
        assertTrue(once.get("exited").asBoolean());
        assertEquals(10, Base64.getDecoder().decode(once.get("out-b64").asText()).length);
        assertTrue(once.get("out-truncated").asBoolean());
        assertFalse(once.get("err-truncated").asBoolean());
    }

    @Test
    void aFastWriterIsHeldAtOneMebibyteBetweenPolls() throws IOException {
        JsonNode r = conn.ok("vivarium-exec", with(with(cmd("head", "-c", "5000000", "/dev/zero"), "max-output-bytes", 10_000_000), "wait-ms", 10000));
        assertFalse(r.get("exited").asBoolean(), "the writer is blocked on a full pipe while its buffer is full");
        long total = Base64.getDecoder().decode(r.get("out-b64").asText()).length;
        assertEquals(1 << 20, total);
        long h = r.get("handle").asLong();
        while (!r.get("exited").asBoolean() || !r.get("out-b64").asText().isEmpty()) {
            r = conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 10000));
            long n = Base64.getDecoder().decode(r.get("out-b64").asText()).length;
            assertTrue(n <= 1 << 20);
            total += n;
            if (r.get("exited").asBoolean() && total == 5_000_000) {
                break;
            }
        }
        assertEquals(5_000_000, total);
        assertFalse(r.get("out-truncated").asBoolean());
    }

    @Test
    void outputIsStreamedAcrossPolls() throws IOException {
        Path go = dir.resolve("go");
        JsonNode r = conn.ok("vivarium-exec", cmd("sh", "-c", "echo one; while [ ! -e " + go + " ]; do sleep 0.02; done; echo two"));
        long h = r.get("handle").asLong();
        StringBuilder first = new StringBuilder(text(r, "out-b64"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!first.toString().equals("one\n")) {
            assertTrue(System.nanoTime() < deadline, "no first piece: " + first);
            r = conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 100));
            assertFalse(r.get("exited").asBoolean());
            first.append(text(r, "out-b64"));
        }
        Files.writeString(go, "");
        r = conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 10000));
        assertTrue(r.get("exited").asBoolean());
        assertEquals("two\n", text(r, "out-b64"), "a poll returns only output not returned before");
    }

    @Test
    void aPollOnOutputIsAnsweredAsSoonAsTheCommandWritesAnything() throws IOException {
        Path go = dir.resolve("go-on-output");
        JsonNode r = conn.ok("vivarium-exec", cmd("sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.02; done; echo one; sleep 300"));
        long h = r.get("handle").asLong();
        long poll = conn.send("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 60000, "on-output", true));
        Files.writeString(go, "");
        JsonNode answer = conn.read();
        assertEquals(poll, answer.get("id").asLong());
        assertFalse(answer.get("return").get("exited").asBoolean(), "answered before the minute passed, the command still runs");
        assertEquals("one\n", text(answer.get("return"), "out-b64"));
        conn.ok("vivarium-exec-kill", Map.of("handle", h));
        conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 10000));
    }

    @Test
    void anOpenStdinTakesWhatIsWrittenUntilEof() throws IOException {
        Map<String, Object> args = new HashMap<>(cmd("cat"));
        args.put("stdin-b64", Base64.getEncoder().encodeToString("first ".getBytes(StandardCharsets.UTF_8)));
        args.put("stdin-open", true);
        JsonNode r = conn.ok("vivarium-exec", args);
        long h = r.get("handle").asLong();
        conn.ok("vivarium-exec-write", Map.of("handle", h, "data-b64",
                Base64.getEncoder().encodeToString("then more".getBytes(StandardCharsets.UTF_8)), "eof", true));
        StringBuilder out = new StringBuilder(text(r, "out-b64"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        do {
            assertTrue(System.nanoTime() < deadline, "cat did not end: " + out);
            r = conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 1000));
            out.append(text(r, "out-b64"));
        } while (!r.get("exited").asBoolean());
        assertEquals("first then more", out.toString());
        assertEquals(0, r.get("exit-code").asInt(), "eof ended cat");

        JsonNode closed = conn.ok("vivarium-exec", cmd("sleep", "5"));
        assertEquals("InvalidParameter", conn.call("vivarium-exec-write", Map.of("handle", closed.get("handle").asLong(),
                "data-b64", "eA==")).get("error").get("class").asText(), "without stdin-open, stdin is closed");
        conn.ok("vivarium-exec-kill", Map.of("handle", closed.get("handle").asLong()));
    }

    @Test
    void aTerminalCarriesInputOutputAndItsSize() throws IOException {
        Map<String, Object> args = new HashMap<>(cmd("sh", "-c", "tty; stty size; echo to-stderr >&2; read line; echo got:$line; read x; stty size"));
        args.put("tty", true);
        args.put("rows", 30);
        args.put("cols", 100);
        JsonNode r = conn.ok("vivarium-exec", args);
        long h = r.get("handle").asLong();
        StringBuilder out = new StringBuilder(text(r, "out-b64"));
        readUntil(h, out, "to-stderr\r\n");
        assertTrue(out.toString().matches("(?s)/dev/pts/[0-9]+\r\n30 100\r\nto-stderr\r\n.*"),
                "the terminal is the command's stdin, stdout and stderr, of the size asked: " + out);
        conn.ok("vivarium-exec-write", Map.of("handle", h, "data-b64", b64("hello\n")));
        readUntil(h, out, "got:hello");
        assertTrue(out.toString().contains("hello\r\ngot:hello"), "the terminal echoes input: " + out);
        conn.ok("vivarium-exec-resize", Map.of("handle", h, "rows", 40, "cols", 120));
        conn.ok("vivarium-exec-write", Map.of("handle", h, "data-b64", b64("\n")));
        JsonNode end = readUntil(h, out, null);
        assertTrue(out.toString().endsWith("40 120\r\n"), "resized: " + out);
        assertEquals(0, end.get("exit-code").asInt());
        assertEquals("", text(end, "err-b64"));

        JsonNode plain = conn.ok("vivarium-exec", cmd("sleep", "5"));
        long p = plain.get("handle").asLong();
        assertEquals("InvalidParameter", conn.call("vivarium-exec-resize", Map.of("handle", p, "rows", 1, "cols", 1))
                .get("error").get("class").asText(), "an exec without a terminal has no size");
        conn.ok("vivarium-exec-kill", Map.of("handle", p));
        Map<String, Object> tooWide = new HashMap<>(cmd("true"));
        tooWide.put("tty", true);
        tooWide.put("cols", 10001);
        assertEquals("InvalidParameter", conn.call("vivarium-exec", tooWide).get("error").get("class").asText());
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    /** Polls until the output holds {@code text}, or, if it is null, until the command exited (that answer). */
    JsonNode readUntil(long handle, StringBuilder out, String text) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            assertTrue(System.nanoTime() < deadline, "waited 10 s for " + (text == null ? "the end" : text) + ": " + out);
            JsonNode r = conn.ok("vivarium-exec-poll", Map.of("handle", handle, "wait-ms", 1000, "on-output", true));
            out.append(text(r, "out-b64"));
            if (text == null ? r.get("exited").asBoolean() : out.toString().contains(text)) {
                return r;
            }
        }
    }

    @Test
    void aLongPollDelaysNoOtherRequest() throws IOException {
        JsonNode r = conn.ok("vivarium-exec", cmd("sleep", "300"));
        long h = r.get("handle").asLong();
        long longPoll = conn.send("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 60000));
        long ping = conn.send("guest-ping", null);
        assertEquals(ping, conn.read().get("id").asLong(), "the ping on the same connection is answered first");
        AgentConnection other = agent.connect();
        assertTrue(other.ok("guest-ping", null).isObject());
        assertTrue(other.ok("vivarium-exec-kill", Map.of("handle", h)).isObject());
        JsonNode deferred = conn.read();
        assertEquals(longPoll, deferred.get("id").asLong(), "the deferred answer carries its request's id");
        assertTrue(deferred.get("return").get("exited").asBoolean());
        assertEquals(9, deferred.get("return").get("signal").asInt());
    }

    @Test
    void orphansAreAdoptedAndReaped() throws Exception {
        Run r = run(cmd("sh", "-c", "sh -c 'sleep 300 >/dev/null 2>&1 & echo $!' "));
        long orphan = Long.parseLong(r.out().trim());
        strays.add(orphan);
        assertEquals(agent.pid(), ppid(orphan), "the agent is the orphan's subreaper");
        ProcessHandle.of(orphan).orElseThrow().destroyForcibly();
        awaitGone(orphan);
    }

    @Test
    void sigtermKillsExecGroupsAndExitsZero() throws Exception {
        JsonNode r = conn.ok("vivarium-exec", cmd("sh", "-c", "echo $$; sleep 300 & echo $!; wait"));
        long h = r.get("handle").asLong();
        StringBuilder out = new StringBuilder(text(r, "out-b64"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (out.toString().split("\n").length < 2) {
            assertTrue(System.nanoTime() < deadline);
            out.append(text(conn.ok("vivarium-exec-poll", Map.of("handle", h, "wait-ms", 100)), "out-b64"));
        }
        long[] pids = Arrays.stream(out.toString().trim().split("\n")).mapToLong(Long::parseLong).toArray();
        for (long pid : pids) {
            strays.add(pid);
        }
        agent.process().destroy();
        assertTrue(agent.process().waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, agent.process().exitValue());
        for (long pid : pids) {
            // killed: gone, or a zombie waiting for whoever adopted it after the agent exited
            long d = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!gone(pid) && !procState(pid).contains("zombie")) {
                assertTrue(System.nanoTime() < d, "process " + pid + " survived SIGTERM: " + procState(pid));
                AgentProcess.pause();
            }
        }
    }

    @Test
    void uidAndGidAreHonouredAsRoot() throws IOException {
        assumeTrue(isRoot(), "needs root: the agent only switches uid/gid when it runs as root");
        assertEquals("65534 65534 65534\n", run(with(cmd("sh", "-c", "echo $(id -u) $(id -g) $(id -G)"), "uid", 65534)).out());
        assertEquals("65534 100\n", run(with(with(cmd("sh", "-c", "echo $(id -u) $(id -g)"), "uid", 65534), "gid", 100)).out());
    }

    static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream().anyMatch(l -> l.matches("Uid:\\s+0\\s.*"));
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void theHandleLimitIs256() throws IOException {
        Set<Long> handles = new HashSet<>();
        JsonNode refused = null;
        for (int i = 0; i < 257 && refused == null; i++) {
            JsonNode r = conn.call("vivarium-exec", cmd("sleep", "300"));
            if (r.has("error")) {
                refused = r.get("error");
            } else {
                handles.add(r.get("return").get("handle").asLong());
            }
        }
        assertEquals(256, handles.size());
        assertEquals("LimitExceeded", refused.get("class").asText());
        for (long h : handles) {
            conn.ok("vivarium-exec-kill", Map.of("handle", h));
        }
    }

    /**
     * A background process that keeps writing to the stdout it inherited (a dev server logging)
     * must not die of EPIPE once its exec has returned; its handle is freed all the same, so such
     * execs never use up the 256 handles.
     */
    @Test
    void aBackgroundWriterOutlivesItsExecAndHoldsNoHandle() throws Exception {
        Path ticks = Files.createFile(dir.resolve("ticks"));
        Run r = run(cmd("sh", "-c", "(while :; do echo tick; echo t >> \"$1\"; sleep 0.05; done) & echo $! >&2", "sh",
                ticks.toString()));
        long writer = Long.parseLong(r.err().trim());
        strays.add(writer);
        long handle = r.last().get("handle").asLong();
        assertEquals("NotFound", conn.call("vivarium-exec-poll", Map.of("handle", handle)).get("error").get("class").asText());
        long seen = Files.size(ticks);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Files.size(ticks) < seen + 20) {
            assertFalse(gone(writer), "the background writer died after its exec returned: " + procState(writer));
            assertTrue(System.nanoTime() < deadline, "the background writer stopped writing: " + procState(writer));
            AgentProcess.pause();
        }
        for (int i = 0; i < 300; i++) {
            assertEquals("", run(cmd("true")).out());
        }
        assertFalse(gone(writer));
    }
}
