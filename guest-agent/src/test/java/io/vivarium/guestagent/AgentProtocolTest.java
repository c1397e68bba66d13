package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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

/** Framing, discovery, errors and connection limits of the agent. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentProtocolTest {
    @TempDir
    Path dir;
    AgentProcess agent;
    AgentConnection conn;

    @BeforeEach
    void start() throws Exception {
        agent = AgentProcess.start(dir);
        conn = agent.connect();
    }

    @AfterEach
    void stop() throws Exception {
        agent.close();
    }

    @Test
    void syncDelimitedWritesFfBeforeTheResponse() throws IOException {
        conn.sendLine("{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":987654321}}");
        assertEquals(0xFF, conn.readByte());
        JsonNode r = AgentConnection.JSON.readTree(conn.readLine());
        assertEquals(987654321L, r.get("return").asLong());
        assertEquals(42, conn.ok("guest-sync", Map.of("id", 42)).asInt());
    }

    @Test
    void ffFromTheHostDiscardsAPartialRequest() throws IOException {
        conn.sendRaw("{\"execute\":\"guest-pi".getBytes(StandardCharsets.UTF_8));
        conn.sendRaw(new byte[] {(byte) 0xFF});
        assertTrue(conn.ok("guest-ping", null).isObject());
    }

    @Test
    void pingAnswersWithTheIdAndNoInterpreterVersionBeforeAnEval() throws IOException {
        conn.sendLine("{\"execute\":\"guest-ping\",\"id\":\"abc\"}");
        JsonNode r = conn.read();
        assertEquals("{\"python-version\":null}", r.get("return").toString());
        assertEquals("abc", r.get("id").asText());
        conn.sendLine("{\"execute\":\"guest-ping\"}");
        assertNull(conn.read().get("id"), "no id asked, none echoed");
    }

    @Test
    void infoListsEveryCommand() throws IOException {
        JsonNode info = conn.ok("guest-info", null);
        assertTrue(info.get("version").asText().startsWith("vivarium-agent"));
        Set<String> names = new TreeSet<>();
        for (JsonNode c : info.get("supported_commands")) {
            names.add(c.get("name").asText());
            assertTrue(c.get("enabled").asBoolean());
            assertEquals(!c.get("name").asText().equals("guest-shutdown"), c.get("success-response").asBoolean(), c.toString());
        }
        assertEquals(new TreeSet<>(List.of("guest-sync-delimited", "guest-sync", "guest-ping", "guest-info", "guest-exec",
                "guest-exec-status", "guest-file-open", "guest-file-read", "guest-file-write", "guest-file-close",
                "guest-fsfreeze-status", "guest-fsfreeze-freeze", "guest-fsfreeze-freeze-list", "guest-fsfreeze-thaw",
                "guest-get-time", "guest-set-time", "guest-shutdown", "vivarium-exec", "vivarium-exec-poll",
                "vivarium-exec-kill", "vivarium-exec-write", "vivarium-exec-resize", "vivarium-file-write", "vivarium-file-read", "vivarium-eval", "vivarium-list")), names);
    }

    @Test
    void unknownCommandsAreCommandNotFound() throws IOException {
        conn.error("no-such-command", null, "CommandNotFound");
    }

    @Test
    void malformedRequestsGetErrorsAndTheConnectionKeepsWorking() throws IOException {
        List<String> bad = List.of("{bad", "[1,2]", "\"just a string\"", "{\"execute\":1}", "{\"execute\":\"guest-ping\",\"x\":1}",
                "{\"execute\":\"guest-ping\",\"arguments\":[]}", "{\"a\":1,\"a\":2}", "{\"execute\":\"guest-ping\"} trailing",
                "[".repeat(100) + "]".repeat(100), "{\"execute\":\"guest-p\\ud800ing\"}", "{\"n\":01}", "{\"n\":1.}");
        for (String line : bad) {
            conn.sendLine(line);
            JsonNode r = conn.read();
            assertEquals("GenericError", r.path("error").path("class").asText(), line + " -> " + r);
        }
        conn.sendRaw(new byte[] {'{', '"', 'a', '"', ':', '"', (byte) 0xC3, '"', '}', '\n'});
        assertEquals("GenericError", conn.read().path("error").path("class").asText(), "invalid UTF-8");
        conn.error("guest-sync", Map.of("id", "seven"), "InvalidParameter");
        conn.error("guest-sync", Map.of("id", 1.5), "InvalidParameter");
        conn.error("guest-sync", Map.of(), "InvalidParameter");
        conn.error("guest-ping", Map.of("unexpected", true), "InvalidParameter");
        conn.error("vivarium-exec", Map.of("argv", List.of()), "InvalidParameter");
        conn.error("vivarium-exec", Map.of("argv", List.of(1, 2)), "InvalidParameter");
        conn.error("vivarium-exec", Map.of("argv", List.of("true"), "env", List.of("A=B")), "InvalidParameter");
        conn.error("vivarium-exec", Map.of("argv", List.of("true"), "stdin-b64", "not base64!"), "InvalidParameter");
        conn.error("vivarium-exec-poll", Map.of("handle", 999999), "NotFound");
        conn.error("guest-file-read", Map.of("handle", 999999), "NotFound");
        assertTrue(conn.ok("guest-ping", null).isObject());
    }

    @Test
    void anOversizeLineIsAnErrorAndClosesOnlyThatConnection() throws Exception {
        byte[] chunk = new byte[1 << 20];
        Arrays.fill(chunk, (byte) 'x');
        Thread writer = Thread.ofVirtual().start(() -> {
            try {
                for (int i = 0; i < 17; i++) {
                    conn.sendRaw(chunk);
                }
            } catch (IOException closedByTheAgent) {
                // expected once the agent gives up on the line
            }
        });
        JsonNode r = conn.read();
        assertEquals("LimitExceeded", r.path("error").path("class").asText(), r.toString());
        assertClosed(conn);
        assertTrue(writer.join(Duration.ofSeconds(30)), "the writer ends once the agent closed the connection");
        assertTrue(agent.connect().ok("guest-ping", null).isObject());
    }

    @Test
    void atMost64ConnectionsAndAFreedSlotIsReused() throws Exception {
        List<AgentConnection> open = new ArrayList<>();
        open.add(conn);
        while (open.size() < 64) {
            open.add(agent.connect());
        }
        for (AgentConnection c : open) {
            assertTrue(c.ok("guest-ping", null).isObject());
        }
        AgentConnection extra = agent.connect();
        JsonNode refused = extra.read();
        assertEquals("LimitExceeded", refused.path("error").path("class").asText(), refused.toString());
        assertClosed(extra);
        open.get(0).close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            AgentConnection again = agent.connect();
            String line;
            long id = again.send("guest-ping", null);
            line = again.readLine();
            if (line != null && line.contains("\"return\"")) {
                assertEquals(id, AgentConnection.JSON.readTree(line).get("id").asLong());
                break;
            }
            assertTrue(System.nanoTime() < deadline, "no slot was freed after closing a connection");
            AgentProcess.pause();
        }
    }

    @Test
    void aSlowReaderDoesNotStallAnotherClient() throws Exception {
        Path big = dir.resolve("big");
        Files.write(big, new byte[64 * 1024]);
        AgentConnection slow = agent.connect();
        StringBuilder many = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            many.append("{\"execute\":\"vivarium-file-read\",\"arguments\":{\"path\":\"").append(big).append("\"},\"id\":").append(i)
                    .append("}\n");
        }
        slow.sendRaw(many.toString().getBytes(StandardCharsets.UTF_8));
        // 200 answers of 85 KiB each are far more than the socket buffers: the agent queues them.
        assertTrue(conn.ok("guest-ping", null).isObject());
        assertEquals(5, conn.ok("guest-sync", Map.of("id", 5)).asInt());
        JsonNode first = slow.read();
        assertEquals(0, first.get("id").asInt(), "the slow reader still gets its answers in order");
    }

    /** The agent closed the connection: end of stream, or a reset when it left our data unread. */
    static void assertClosed(AgentConnection c) {
        try {
            String line = c.readLine();
            assertNull(line, "expected the connection to be closed, got " + line);
        } catch (IOException reset) {
            // closed with our bytes unread: Linux reports ECONNRESET on a Unix socket
        }
    }

    @Test
    void fsfreezeStatusIsThawedAndTimeIsNanoseconds() throws IOException {
        assertEquals("thawed", conn.ok("guest-fsfreeze-status", null).asText());
        long ns = conn.ok("guest-get-time", null).asLong();
        assertTrue(Math.abs(ns / 1_000_000 - System.currentTimeMillis()) < 600_000, "guest-get-time is ns since the epoch: " + ns);
        conn.error("guest-set-time", Map.of("time", "now"), "InvalidParameter");
        conn.error("guest-fsfreeze-freeze-list", Map.of("mountpoints", List.of(dir.resolve("missing").toString())), "NotFound");
        JsonNode notMounted = conn.error("guest-fsfreeze-freeze-list", Map.of("mountpoints", List.of(dir.toString())),
                "InvalidParameter");
        assertTrue(notMounted.get("desc").asText().contains("is not a mountpoint"), notMounted.toString());
        assertEquals("thawed", conn.ok("guest-fsfreeze-status", null).asText());
    }

    @Test
    void shutdownIsRefusedOutsideAGuest() throws IOException {
        JsonNode e = conn.error("guest-shutdown", Map.of("mode", "reboot"), "GenericError");
        assertTrue(e.get("desc").asText().contains("PID 1"), e.toString());
        conn.error("guest-shutdown", Map.of("mode", "sideways"), "InvalidParameter");
    }

    @Test
    void sigtermExitsZero() throws Exception {
        agent.process().destroy();
        assertTrue(agent.process().waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, agent.process().exitValue());
        assertFalse(Files.exists(dir.resolve("agent.sock")), "the socket is removed");
    }
}
