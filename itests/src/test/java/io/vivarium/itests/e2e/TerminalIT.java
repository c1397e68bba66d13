package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URLEncoder;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Terminals over WebSocket ({@code GET /v1/sandboxes/{id}/pty}) on a procbox sandbox of a real
 * daemon, driven by the JDK's WebSocket client: a shell that types, resizes and exits; {@code top},
 * a full-screen program, drawing its screen and quitting on a key; two terminals at once; a client
 * that goes hanging its command up; and the errors.
 */
class TerminalIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "acme-admin acme admin\nacme-user acme user\nglobex-admin globex admin\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "acme-admin");
        id = admin.createSandbox();
    }

    private static Terminal open(String query) {
        return new Terminal(daemon.baseUrl(), "acme-admin", "/v1/sandboxes/" + id + "/pty" + query);
    }

    private static String args(String... argv) {
        try {
            return URLEncoder.encode(new ObjectMapper().writeValueAsString(List.of(argv)), StandardCharsets.UTF_8);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aShellTypesResizesAndExits() throws Exception {
        try (Terminal t = open("?rows=30&cols=100")) {
            JsonNode started = t.message();
            assertEquals("started", started.get("type").asText());
            assertTrue(started.get("command").get("terminal").asBoolean(), started.toString());
            t.type("stty size; echo term=$TERM\n");
            t.screenWhen(s -> s.contains("30 100") && s.contains("term=xterm-256color"), "the size and TERM");
            t.control("{\"type\": \"resize\", \"rows\": 40, \"cols\": 120}");
            t.type("stty size\n");
            t.screenWhen(s -> s.contains("40 120"), "the new size");
            t.type("exit 3\n");
            JsonNode exit = t.message();
            assertEquals("exit", exit.get("type").asText(), exit.toString());
            assertEquals(3, exit.get("command").get("exit_code").asInt(), exit.toString());
            assertEquals(1000, t.closed.get(20, TimeUnit.SECONDS), "a normal close once the shell exited");
        }
    }

    @Test
    void topDrawsItsFullScreenAndQuitsOnAKey() throws Exception {
        try (Terminal t = open("?rows=25&cols=90&term=xterm&args=" + args("top", "-d", "0.5"))) {
            assertEquals("started", t.message().get("type").asText());
            String first = t.screenWhen(s -> s.contains("Tasks:") && s.contains("PID"), "top's summary and header");
            assertTrue(first.contains("\u001b["), "top draws with escape sequences: " + first);
            t.control("{\"type\": \"resize\", \"rows\": 50, \"cols\": 160}");
            t.type("q");
            JsonNode exit = t.message();
            assertEquals("exit", exit.get("type").asText(), exit.toString());
            assertEquals(0, exit.get("command").get("exit_code").asInt(), "q quits top: " + exit);
        }
    }

    @Test
    void twoTerminalsOfOneSandboxKeepApart() throws Exception {
        try (Terminal a = open(""); Terminal b = open("")) {
            String ca = a.message().get("command").get("id").asText();
            String cb = b.message().get("command").get("id").asText();
            a.type("echo one-$((20+1))\n");
            b.type("echo two-$((40+2))\n");
            a.screenWhen(s -> s.contains("one-21"), "its own output");
            b.screenWhen(s -> s.contains("two-42"), "its own output");
            assertTrue(!a.screenWhen(s -> true, "").contains("two-42") && !b.screenWhen(s -> true, "").contains("one-21"));
            JsonNode list = admin.get("/v1/sandboxes/" + id + "/commands").body();
            long terminals = 0;
            for (JsonNode c : list) {
                if ((c.get("id").asText().equals(ca) || c.get("id").asText().equals(cb)) && c.get("terminal").asBoolean()) {
                    terminals++;
                }
            }
            assertEquals(2, terminals, "both are background commands with a terminal: " + list);
        }
    }

    @Test
    void aClientThatGoesHangsItsCommandUp() throws Exception {
        String cid;
        try (Terminal t = open("?args=" + args("sleep", "600"))) {
            cid = t.message().get("command").get("id").asText();
        } // abort: the client goes without a close
        JsonNode done = admin.post("/v1/sandboxes/" + id + "/commands/" + cid + "/wait?timeout_secs=30", null).body();
        assertEquals("exited", done.get("status").asText(), done.toString());
        assertEquals(128 + 1, done.get("exit_code").asInt(), "SIGHUP ended it: " + done);
    }

    @Test
    void aTerminalCommandIsResizedOverHttpToo() throws Exception {
        JsonNode started = admin.post("/v1/sandboxes/" + id + "/commands?tty=true&rows=10&cols=20",
                Map.of("args", List.of("sh", "-c", "read x; stty size"))).body();
        String cid = started.get("id").asText();
        assertTrue(started.get("terminal").asBoolean());
        assertEquals(200, admin.post("/v1/sandboxes/" + id + "/commands/" + cid + "/resize", Map.of("rows", 11, "cols", 21)).status());
        admin.sendBytes("POST", "/v1/sandboxes/" + id + "/commands/" + cid + "/stdin", "\n".getBytes(StandardCharsets.UTF_8));
        JsonNode done = admin.post("/v1/sandboxes/" + id + "/commands/" + cid + "/wait?timeout_secs=30", null).body();
        assertEquals(0, done.get("exit_code").asInt(), done.toString());
        JsonNode out = admin.get("/v1/sandboxes/" + id + "/commands/" + cid + "/output").body();
        StringBuilder text = new StringBuilder();
        out.get("chunks").forEach(c -> text.append(new String(java.util.Base64.getDecoder().decode(c.get("data").asText()),
                StandardCharsets.UTF_8)));
        assertTrue(text.toString().contains("11 21"), "resized before stty ran: " + text);

        JsonNode plain = admin.post("/v1/sandboxes/" + id + "/commands", Map.of("args", List.of("sleep", "30"))).body();
        Api.Response notATerminal = admin.post("/v1/sandboxes/" + id + "/commands/" + plain.get("id").asText() + "/resize",
                Map.of("rows", 11, "cols", 21));
        assertEquals(409, notATerminal.status(), notATerminal.error());
        admin.post("/v1/sandboxes/" + id + "/commands/" + plain.get("id").asText() + "/signal", Map.of("signal", 9));
    }

    @Test
    void badRequestsAreRefusedBeforeAnyTerminalStarts() throws Exception {
        Api.Response noUpgrade = admin.get("/v1/sandboxes/" + id + "/pty");
        assertEquals(400, noUpgrade.status());
        assertTrue(noUpgrade.error().contains("WebSocket"), noUpgrade.error());
        for (String bad : List.of("?tty=true&rows=0", "?tty=true&cols=10001", "?tty=maybe")) {
            Api api = bad.contains("maybe") ? admin.outsideTheContract() : admin;
            Api.Response r = api.post("/v1/sandboxes/" + id + "/commands" + bad, Map.of("args", List.of("true")));
            assertEquals(400, r.status(), bad + ": " + r.error());
        }
        assertEquals(400, admin.outsideTheContract().post("/v1/sandboxes/" + id + "/commands/cmd-000000000000/resize", Map.of("rows", 1)).status(),
                "cols missing");
        assertEquals(404, handshakeStatus("globex-admin", "/v1/sandboxes/" + id + "/pty"), "another tenant's sandbox");
        assertEquals(403, handshakeStatus("acme-user", "/v1/sandboxes/" + id + "/pty"), "a terminal needs an admin, as exec does");
        assertEquals(401, handshakeStatus("nobody", "/v1/sandboxes/" + id + "/pty"));
        assertEquals(400, handshakeStatus("acme-admin", "/v1/sandboxes/" + id + "/pty?args=" + args()), "empty args");
    }

    private static int handshakeStatus(String token, String path) {
        CompletionException e = assertThrows(CompletionException.class, () -> new Terminal(daemon.baseUrl(), token, path));
        return assertInstanceOf(WebSocketHandshakeException.class, e.getCause()).getResponse().statusCode();
    }
}
