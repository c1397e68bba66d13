package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command-line server spoken to as bin/vivarium-cli speaks to it (CliProtocol), in this JVM. */
class CliServerTest {
    @TempDir
    static Path dir;
    static Path socket;
    static CompletableFuture<Integer> server;

    /** What a command printed, in frame order, and its exit code. */
    record Answer(int code, String out, String err) {
    }

    @BeforeAll
    static void start() throws Exception {
        socket = dir.resolve("cli.sock");
        server = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> server.complete(CliServer.run(List.of(socket.toString()), Map.of(),
                new PrintStream(new ByteArrayOutputStream()))));
        for (int i = 0; i < 500 && !answers(); i++) {
            Thread.sleep(10);
        }
    }

    private static boolean answers() {
        try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    @AfterAll
    static void stopsWhenItsSocketIsRemoved() throws Exception {
        Files.delete(socket);
        assertEquals(0, server.get(10, TimeUnit.SECONDS), "the server ends once its socket is gone");
    }

    @Test
    void runsACommandLineWithTheCallersDirectoryAndEnvironment() throws Exception {
        Path work = Files.createDirectories(dir.resolve("work"));
        Files.createDirectories(work.resolve("state"));
        Answer noDaemon = ask(work, List.of("VIVARIUM_STATE=state", "PATH=/bin"), "sandbox", "ls");
        assertEquals(1, noDaemon.code());
        assertTrue(noDaemon.err().contains(work.resolve("state").resolve("address").toString()),
                "the relative state folder is the caller's: " + noDaemon.err());

        Answer unreachable = ask(work, List.of(), "sandbox", "ls", "--url", "http://127.0.0.1:1", "--token", "t");
        assertEquals(1, unreachable.code());
        assertTrue(unreachable.err().contains("the daemon at http://127.0.0.1:1 did not answer")
                && unreachable.err().contains("(its URL from --url)"), "names the daemon once, and where its URL came from: " + unreachable.err());
    }

    @Test
    void commandsRunSideBySide() throws Exception {
        List<Future<Answer>> answers = new ArrayList<>();
        try (ExecutorService callers = Executors.newFixedThreadPool(8)) {
            for (int i = 0; i < 8; i++) {
                String port = Integer.toString(1 + i);
                answers.add(callers.submit(() -> ask(dir, List.of(), "sandbox", "ls", "--url", "http://127.0.0.1:" + port, "--token", "t")));
            }
            for (int i = 0; i < answers.size(); i++) {
                Answer a = answers.get(i).get(30, TimeUnit.SECONDS);
                assertEquals(1, a.code());
                assertTrue(a.err().contains("the daemon at http://127.0.0.1:" + (1 + i) + " did not answer"), "each its own output: " + a.err());
            }
        }
    }

    @Test
    void usageErrorsAndCommandsItDoesNotRunExitTwo() throws Exception {
        Answer usage = ask(dir, List.of(), "sandbox", "frobnicate", "--url", "http://127.0.0.1:1", "--token", "t");
        assertEquals(2, usage.code());
        assertTrue(usage.err().contains("usage: vivarium sandbox"), usage.err());
        Answer shell = ask(dir, List.of(), "sandbox", "shell", "sb-1", "--url", "http://127.0.0.1:1", "--token", "t");
        assertEquals(2, shell.code());
        assertTrue(shell.err().contains("VIVARIUM_CLI_SERVER=off"), "a terminal is not the server's to give: " + shell.err());
        Answer serve = ask(dir, List.of(), "serve");
        assertEquals(2, serve.code());
        assertTrue(serve.err().contains("not 'serve'"), serve.err());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)), "the socket is its user's only");
    }

    @Test
    void aRequestOfAnotherProtocolIsClosedWithoutAnAnswer() throws Exception {
        try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            byte[] junk = (String.join("\0", "2", "/", "0", "022", "0", "sandbox") + "\0").getBytes(StandardCharsets.UTF_8);
            c.write(ByteBuffer.allocate(4 + junk.length).putInt(junk.length).put(junk).flip());
            assertEquals(-1, c.read(ByteBuffer.allocate(1)), "no frame for a request it cannot read");
        }
        assertFalse(ask(dir, List.of(), "serve").err().isEmpty(), "and it serves the next");
    }

    @Test
    void stopsWhenNoCommandCameForItsIdleTime() throws Exception {
        Path idle = dir.resolve("idle.sock");
        CompletableFuture<Integer> stopped = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> stopped.complete(CliServer.run(List.of(idle.toString()),
                Map.of("VIVARIUM_CLI_IDLE_SECS", "1"), new PrintStream(new ByteArrayOutputStream()))));
        assertEquals(0, stopped.get(20, TimeUnit.SECONDS), "it ends by itself");
        assertFalse(Files.exists(idle), "and takes its socket with it");
        assertEquals(2, CliServer.run(List.of(idle.toString()), Map.of("VIVARIUM_CLI_IDLE_SECS", "soon"),
                new PrintStream(new ByteArrayOutputStream())), "an idle time that is not a number of seconds is a usage error");
    }

    private static Answer ask(Path workDir, List<String> env, String... words) throws IOException {
        List<String> strings = new ArrayList<>(List.of(CliProtocol.VERSION, workDir.toString(), "0", "022", Integer.toString(env.size())));
        strings.addAll(env);
        strings.addAll(List.of(words));
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (String s : strings) {
            body.writeBytes(s.getBytes(StandardCharsets.UTF_8));
            body.write(0);
        }
        try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            c.write(ByteBuffer.allocate(4 + body.size()).putInt(body.size()).put(body.toByteArray()).flip());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            ByteBuffer taken = readFully(c, 5);
            assertEquals(List.of(CliProtocol.TAKEN, 0), List.of(taken.get(), taken.getInt()), "the command is taken first");
            while (true) {
                ByteBuffer header = readFully(c, 5);
                byte type = header.get();
                ByteBuffer payload = readFully(c, header.getInt());
                switch (type) {
                    case CliProtocol.STDOUT -> out.write(payload.array());
                    case CliProtocol.STDERR -> err.write(payload.array());
                    case CliProtocol.EXIT -> {
                        return new Answer(payload.getInt(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
                    }
                    default -> throw new AssertionError("a frame of type " + type);
                }
            }
        }
    }

    private static ByteBuffer readFully(SocketChannel c, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (c.read(b) < 0) {
                throw new IOException("the server closed the connection");
            }
        }
        return b.flip();
    }
}
