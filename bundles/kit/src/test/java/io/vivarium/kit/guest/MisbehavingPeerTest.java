package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fake agent turned hostile or slow: the client must fail clearly and in time, never hang or trust it. */
class MisbehavingPeerTest {
    private static final Map<String, String> ENV = GuestAgentContract.ENV;

    @TempDir
    Path dir;
    FakeAgent fake;
    GuestAgentClient client;

    @BeforeEach
    void start() throws Exception {
        fake = new FakeAgent(dir.resolve("agent.sock"));
        client = GuestAgentClient.unixSocket(fake.socket());
        client.ping(Deadline.after(Duration.ofSeconds(5)));
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        fake.close();
    }

    private void answer(String command, String line) {
        Function<JsonNode, String> override = request -> request.path("execute").asText().equals(command) ? line : null;
        fake.override = override;
    }

    private GuestAgentException failure(Runnable call) {
        return assertThrows(GuestAgentException.class, call::run);
    }

    @Test
    void aHungAgentIsADeadlineErrorWithinTheDeadline() {
        answer("guest-ping", FakeAgent.HANG);
        long start = System.nanoTime();
        GuestAgentException e = failure(() -> client.ping(Deadline.after(Duration.ofMillis(300))));
        long took = System.nanoTime() - start;
        assertEquals(504, e.status(), e.getMessage());
        // the bound is the behaviour under test (a call ends at its deadline, not the agent's whim), ten times the deadline
        assertTrue(took < TimeUnit.SECONDS.toNanos(3), "took " + took / 1_000_000 + " ms");
    }

    @Test
    void anAgentThatDiesMidAnswerIsABadGateway() {
        answer("guest-ping", "{\"return\": {" + "\u0000close");
        fake.override = request -> request.path("execute").asText().equals("guest-ping") ? FakeAgent.CLOSE : null;
        GuestAgentException e = failure(() -> client.ping(GuestAgentContract.seconds(5)));
        assertEquals(502, e.status());
        assertTrue(e.getMessage().contains("closed by the agent"), e.getMessage());
    }

    @Test
    void garbageIsABadGatewayAndTheNextCallWorksOnAFreshConnection() {
        answer("guest-ping", "this is not json");
        assertEquals(502, failure(() -> client.ping(GuestAgentContract.seconds(5))).status());
        fake.override = request -> null;
        int connections = fake.accepted.get();
        client.ping(GuestAgentContract.seconds(5));
        assertEquals(connections + 1, fake.accepted.get(), "the next call came on a fresh connection");
        assertEquals("guest-ping", fake.received.getLast());
    }

    @Test
    void anAnswerWithBothReturnAndErrorIsRefused() {
        answer("guest-ping", "{\"return\": {}, \"error\": {\"class\": \"GenericError\", \"desc\": \"x\"}}");
        assertTrue(failure(() -> client.ping(GuestAgentContract.seconds(5))).getMessage().contains("exactly one"));
    }

    @Test
    void anOversizedLineIsRefusedAndTheConnectionDropped() {
        answer("guest-ping", "{\"return\": \"" + "x".repeat(Commands.MAX_LINE) + "\"}");
        GuestAgentException e = failure(() -> client.ping(GuestAgentContract.seconds(10)));
        assertEquals(502, e.status());
        assertTrue(e.getMessage().contains("longer than"), e.getMessage());
    }

    @Test
    void invalidBase64IsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("f"), "content");
        answer("vivarium-file-read", "{\"return\": {\"data-b64\": \"!!not base64!!\", \"eof\": true, \"size\": 7}}");
        GuestAgentException e = failure(() -> client.readFile(file.toString(), 100, GuestAgentContract.seconds(5)));
        assertTrue(e.getMessage().contains("not valid base64"), e.getMessage());
    }

    @Test
    void moreDataThanAskedForIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("f"), "content");
        String tooMuch = java.util.Base64.getEncoder().encodeToString(new byte[200]);
        answer("vivarium-file-read", "{\"return\": {\"data-b64\": \"" + tooMuch + "\", \"eof\": true, \"size\": 7}}");
        GuestAgentException e = failure(() -> client.readFile(file.toString(), 100, GuestAgentContract.seconds(5)));
        assertTrue(e.getMessage().contains("more than 101 bytes"), e.getMessage());
    }

    @Test
    void aPingWhosePythonVersionIsNotAShortStringIsMalformed() {
        answer("guest-ping", "{\"return\": {\"python-version\": 3}}");
        GuestAgentException e = failure(() -> client.pingAndVersion(GuestAgentContract.seconds(5)));
        assertTrue(e.getMessage().contains("python-version"), e.getMessage());
    }

    @Test
    void impossibleNumbersAreRefused() {
        answer("vivarium-exec", "{\"return\": {\"handle\": 1, \"exited\": true, \"exit-code\": 99999, "
                + "\"timed-out\": false, \"out-b64\": \"\", \"err-b64\": \"\", \"out-truncated\": false, "
                + "\"err-truncated\": false, \"duration-ms\": 1}}");
        GuestAgentException e = failure(() -> client.exec(ExecSpec.of("true").withEnv(ENV), GuestAgentContract.seconds(5)));
        assertTrue(e.getMessage().contains("out of range"), e.getMessage());
        answer("guest-get-time", "{\"return\": 123456789012345678901234567890}");
        assertEquals(502, failure(() -> client.getTime(GuestAgentContract.seconds(5))).status());
    }

    @Test
    void aMissingFieldIsNamed() {
        answer("vivarium-exec", "{\"return\": {\"handle\": 1, \"exited\": false}}");
        GuestAgentException e = failure(() -> client.exec(ExecSpec.of("true").withEnv(ENV), GuestAgentContract.seconds(5)));
        assertTrue(e.getMessage().contains("\"out-b64\""), e.getMessage());
    }

    @Test
    void aLongCommandOutlivingTheDeadlineIsKilledAndReported() {
        long start = System.nanoTime();
        GuestAgentException e = failure(() -> client.exec(ExecSpec.of("sleep", "30").withEnv(ENV),
                Deadline.after(Duration.ofMillis(500))));
        assertEquals(504, e.status(), e.getMessage());
        // the behaviour under test: the call ends at its deadline (0.5 s), not the command's (30 s)
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
    }

    @Test
    void concurrentExecsUseSeparateConnectionsAndNeverDelayAPing() throws Exception {
        Path go = dir.resolve("go");
        ExecSpec waitForGo = ExecSpec.of("sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.01; done; echo done", "sh",
                go.toString()).withEnv(ENV);
        // threads of their own: the common pool has one thread on a 2-core machine
        CompletableFuture<GuestExecResult> first = new CompletableFuture<>();
        CompletableFuture<GuestExecResult> second = new CompletableFuture<>();
        for (CompletableFuture<GuestExecResult> exec : java.util.List.of(first, second)) {
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    exec.complete(client.exec(waitForGo, GuestAgentContract.seconds(20)));
                } catch (RuntimeException e) {
                    exec.completeExceptionally(e);
                }
            });
        }
        Deadline started = GuestAgentContract.seconds(10);
        while (fake.execsStarted.get() < 2) {
            started.check("waiting for both execs to start");
            Thread.onSpinWait();
        }
        client.ping(GuestAgentContract.seconds(5));
        assertFalse(first.isDone() || second.isDone(), "the execs were still waiting when the ping came back");
        Files.createFile(go);
        assertEquals("done\n", GuestAgentContract.text(first.get(20, TimeUnit.SECONDS).stdout()));
        assertEquals("done\n", GuestAgentContract.text(second.get(20, TimeUnit.SECONDS).stdout()));
        assertTrue(fake.maxOpen.get() >= 3, "connections open at once: " + fake.maxOpen.get());
    }

    @Test
    void onOneStreamADeferredAnswerComesAfterALaterOne() throws Exception {
        Path go = dir.resolve("go");
        GuestAgentClient stream = new GuestAgentClient(GuestTransport.stream("fake stream", () -> {
            SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(fake.socket()));
            return channel;
        }));
        try (stream) {
            int before = fake.maxOpen.get();
            CompletableFuture<GuestExecResult> exec = CompletableFuture.supplyAsync(() -> stream.exec(
                    ExecSpec.of("sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.01; done", "sh", go.toString())
                            .withEnv(ENV), GuestAgentContract.seconds(20)));
            Deadline started = GuestAgentContract.seconds(10);
            while (fake.execsStarted.get() < 1) {
                started.check("waiting for the exec to start");
                Thread.onSpinWait();
            }
            stream.ping(GuestAgentContract.seconds(5));
            assertFalse(exec.isDone(), "the exec's answer was still deferred when the ping's came back");
            Files.createFile(go);
            assertEquals(0, exec.get(20, TimeUnit.SECONDS).exitCode());
            assertEquals(before + 1, fake.maxOpen.get(), "one stream carried both");
        }
    }

    @Test
    void aStreamFailureFailsTheWaitingCallAndTheStreamReopens() throws Exception {
        GuestAgentClient stream = new GuestAgentClient(GuestTransport.stream("fake stream", () -> {
            SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(fake.socket()));
            return channel;
        }));
        try (stream) {
            stream.ping(GuestAgentContract.seconds(5));
            answer("guest-ping", "{\"return\": {}}");
            GuestAgentException e = failure(() -> stream.ping(GuestAgentContract.seconds(5)));
            assertTrue(e.getMessage().contains("without an id"), e.getMessage());
            fake.override = request -> null;
            int connections = fake.accepted.get();
            stream.ping(GuestAgentContract.seconds(5));
            assertEquals(connections + 1, fake.accepted.get(), "the stream was reopened for the next call");
        }
    }

    @Test
    void aStockStreamIsResynchronisedAfterACallerGaveUp() throws Exception {
        try (FakeAgent stock = new FakeAgent(dir.resolve("stock.sock"), true);
                GuestAgentClient stream = streamTo(stock)) {
            assertFalse(stream.peer(GuestAgentContract.seconds(5)).vivariumAgent());
            stock.override = request -> request.path("execute").asText().equals("guest-ping")
                    ? FakeAgent.LATE + "{\"return\": {}}" : null;
            assertEquals(504, failure(() -> stream.ping(Deadline.after(Duration.ofMillis(100)))).status());
            stock.sendLate();
            stock.override = request -> null;
            // without the resync this would read the stale {} as the time
            assertTrue(stream.getTime(GuestAgentContract.seconds(5)) > 0);
        }
    }

    @Test
    void anAgentThatIsNotThereIsABadGatewayAtOnce() {
        try (GuestAgentClient absent = GuestAgentClient.unixSocket(dir.resolve("no-agent.sock"))) {
            GuestAgentException e = failure(() -> absent.ping(GuestAgentContract.seconds(5)));
            assertEquals(502, e.status());
            assertTrue(e.getMessage().contains("cannot connect"), e.getMessage());
        }
    }

    @Test
    void aHungAgentOnAStreamIsADeadlineErrorAndLaterCallsStillWork() {
        try (GuestAgentClient stream = streamTo(fake)) {
            stream.ping(GuestAgentContract.seconds(5));
            answer("guest-ping", FakeAgent.HANG);
            long start = System.nanoTime();
            assertEquals(504, failure(() -> stream.ping(Deadline.after(Duration.ofMillis(300)))).status());
            // the behaviour under test: a hung stream fails the call at its deadline, ten times over
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3));
            fake.override = request -> null;
            int pings = fake.requests("guest-ping").size();
            stream.ping(GuestAgentContract.seconds(5));
            assertEquals(pings + 1, fake.requests("guest-ping").size(), "the later ping reached the agent");
        }
    }

    @Test
    void closingAStreamClientStopsItsReaderThread() throws Exception {
        GuestAgentClient stream = streamTo(fake);
        stream.ping(GuestAgentContract.seconds(5));
        Thread reader = Thread.getAllStackTraces().keySet().stream()
                .filter(thread -> thread.getName().equals("guest-agent reader fake stream")).findFirst().orElseThrow();
        stream.close();
        reader.join(TimeUnit.SECONDS.toMillis(5));
        assertFalse(reader.isAlive(), "a closed client must not pin its bundle revision with a thread");
    }

    private static GuestAgentClient streamTo(FakeAgent agent) {
        return new GuestAgentClient(GuestTransport.stream("fake stream", () -> {
            SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(agent.socket()));
            return channel;
        }));
    }
}
