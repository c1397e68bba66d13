package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Streamed exec and background commands on a procbox sandbox of a real daemon, read as a client
 * of server-sent events reads them: output as it is written, a reader that reconnects with
 * {@code Last-Event-ID} getting the rest without loss or repetition, keep-alives in silence, the
 * exit event with the exec's own timeout and cap, signals and waits, and the errors.
 */
class CommandStreamIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Api admin;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "acme-admin acme admin\nacme-user acme user\nglobex-admin globex admin\n");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "acme-admin");
        id = admin.createSandbox();
    }

    private static String commands() {
        return "/v1/sandboxes/" + id + "/commands";
    }

    private static Map<String, Object> sh(String script, Object... more) {
        Map<String, Object> body = new java.util.HashMap<>(Map.of("args", List.of("sh", "-c", script)));
        for (int i = 0; i < more.length; i += 2) {
            body.put((String) more[i], more[i + 1]);
        }
        return body;
    }

    /** The events of a stream until its last one ({@code exit} or {@code error}), keep-alives left out. */
    private static List<ServerSentEvents.Event> toTheEnd(ServerSentEvents events) throws IOException {
        List<ServerSentEvents.Event> read = new ArrayList<>();
        for (ServerSentEvents.Event e; (e = events.next()) != null;) {
            if (!e.isComment()) {
                read.add(e);
            }
        }
        return read;
    }

    private static String text(List<ServerSentEvents.Event> events, String stream) {
        StringBuilder s = new StringBuilder();
        events.stream().filter(e -> e.name().equals(stream)).forEach(e -> s.append(e.data().get("text").asText()));
        return s.toString();
    }

    @Test
    void aStreamedExecDeliversEachWriteWhileTheCommandRunsThenItsExit() throws Exception {
        HttpResponse<java.io.InputStream> r = admin.stream("POST", "/v1/sandboxes/" + id + "/exec/stream",
                sh("echo line 1; echo warn >&2; sleep 2; echo line 2; exit 3"));
        assertEquals("text/event-stream", r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        try (ServerSentEvents events = new ServerSentEvents(r.body())) {
            ServerSentEvents.Event started = events.next();
            assertEquals("started", started.name());
            String command = started.data().get("id").asText();
            List<ServerSentEvents.Event> rest = new ArrayList<>();
            ServerSentEvents.Event first;
            do { // stderr's "warn" may come first: the two pipes are read apart
                first = events.nextEvent();
                rest.add(first);
            } while (!first.name().equals("stdout"));
            assertEquals("line 1\n", first.data().get("text").asText());
            assertEquals(first.data().get("offset").asLong() + 7, Long.parseLong(first.id()),
                    "the id is the offset the next chunk starts at");
            assertEquals("running", Api.expect(200, admin.get(commands() + "/" + command)).get("status").asText(),
                    "the first line arrived while the command still ran");
            rest.addAll(toTheEnd(events));
            assertEquals("warn\n", text(rest, "stderr"));
            assertEquals("line 1\nline 2\n", text(rest, "stdout"));
            ServerSentEvents.Event exit = rest.get(rest.size() - 1);
            assertEquals("exit", exit.name());
            assertEquals(3, exit.data().get("exit_code").asInt());
            assertEquals("exited", exit.data().get("status").asText());
            assertEquals(19, exit.data().get("output_bytes").asLong());
            assertEquals("19", exit.id());
        }
    }

    @Test
    void aReaderThatReconnectsWithLastEventIdGetsTheRestWithoutLossOrRepetition() throws Exception {
        StringBuilder expected = new StringBuilder();
        for (int i = 1; i <= 40; i++) {
            expected.append(i).append('\n');
        }
        String command = Api.expect(201, admin.post(commands(), sh("for i in $(seq 1 40); do echo $i; sleep 0.05; done")))
                .get("id").asText();
        StringBuilder got = new StringBuilder();
        String lastId;
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("GET", commands() + "/" + command + "/events", null).body())) {
            ServerSentEvents.Event e = events.nextEvent();
            got.append(e.data().get("text").asText());
            lastId = e.id();
        }
        try (ServerSentEvents events = new ServerSentEvents(
                admin.stream("GET", commands() + "/" + command + "/events", null, "Last-Event-ID", lastId).body())) {
            List<ServerSentEvents.Event> rest = toTheEnd(events);
            got.append(text(rest, "stdout"));
            assertEquals("exit", rest.get(rest.size() - 1).name());
        }
        assertEquals(expected.toString(), got.toString());
        try (ServerSentEvents again = new ServerSentEvents(admin.stream("GET", commands() + "/" + command + "/events?from=0", null).body())) {
            assertEquals(expected.toString(), text(toTheEnd(again), "stdout"), "an ended command's output is read again from 0");
        }
    }

    @Test
    void aSilentCommandIsKeptAliveAndEndsWhenSignalledAndWaitedFor() throws Exception {
        JsonNode command = Api.expect(201, admin.post(commands(), sh("exec sleep 300", "timeout_secs", 600)));
        String path = commands() + "/" + command.get("id").asText();
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("GET", path + "/events", null).body())) {
            ServerSentEvents.Event opening = events.next();
            assertEquals("command " + command.get("id").asText(), opening.comment(), "the stream opens at once, with a comment");
            ServerSentEvents.Event e = events.next();
            assertTrue(e.isComment(), "a silent command's stream carries a keep-alive: " + e);
            assertEquals("keep-alive", e.comment());
            Api.expect(200, admin.post(path + "/signal", Map.of("signal", 15)));
            List<ServerSentEvents.Event> rest = toTheEnd(events);
            assertEquals(128 + 15, rest.get(rest.size() - 1).data().get("exit_code").asInt());
        }
        JsonNode waited = Api.expect(200, admin.post(path + "/wait?timeout_secs=5", null));
        assertEquals("exited", waited.get("status").asText());
        assertEquals(409, admin.post(path + "/signal", Map.of("signal", 15)).status(), "an ended command is not signalled");
        boolean listed = false;
        for (JsonNode c : Api.expect(200, admin.get(commands()))) {
            listed |= c.get("id").asText().equals(command.get("id").asText());
        }
        assertTrue(listed, "the sandbox lists its commands");
    }

    @Test
    void aReaderThatGoesLeavesTheCommandRunningUnlessItAskedForItToBeKilled() throws Exception {
        String kept;
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("POST", "/v1/sandboxes/" + id + "/exec/stream",
                sh("exec sleep 300", "timeout_secs", 600)).body())) {
            kept = events.next().data().get("id").asText();
        }
        String killed;
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("POST",
                "/v1/sandboxes/" + id + "/exec/stream?on_disconnect=kill", sh("exec sleep 300", "timeout_secs", 600)).body())) {
            killed = events.next().data().get("id").asText();
        }
        JsonNode gone = Api.expect(200, admin.post(commands() + "/" + killed + "/wait?timeout_secs=30", null));
        assertEquals(128 + 9, gone.get("exit_code").asInt(), "killed once the stream found its reader gone: " + gone);
        assertEquals("running", Api.expect(200, admin.get(commands() + "/" + kept)).get("status").asText());
        Api.expect(200, admin.post(commands() + "/" + kept + "/signal", Map.of("signal", 9)));
    }

    @Test
    void aCommandStartedWithItsStdinOpenReadsWhatIsWrittenToItUntilEof() throws Exception {
        String command = Api.expect(201, admin.post(commands() + "?stdin=open",
                sh("while read line; do echo got $line; done; echo bye", "timeout_secs", 120))).get("id").asText();
        String path = commands() + "/" + command;
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("GET", path + "/events", null).body())) {
            Api.expect(200, admin.sendBytes("POST", path + "/stdin", "one\n".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            ServerSentEvents.Event e = events.nextEvent();
            assertEquals("got one\n", e.data().get("text").asText(), "the command answered what was written while it runs");
            Api.expect(200, admin.sendBytes("POST", path + "/stdin?eof=true", "two\n".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            List<ServerSentEvents.Event> rest = toTheEnd(events);
            assertEquals("got two\nbye\n", text(rest, "stdout"), "eof ended its read loop");
            assertEquals(0, rest.get(rest.size() - 1).data().get("exit_code").asInt());
        }
        assertEquals(409, admin.sendBytes("POST", path + "/stdin", new byte[] {'x'}).status(), "its stdin is closed");
        String closed = Api.expect(201, admin.post(commands(), sh("sleep 5"))).get("id").asText();
        assertEquals(409, admin.sendBytes("POST", commands() + "/" + closed + "/stdin", new byte[] {'x'}).status(),
                "a command started without ?stdin=open has no stdin to write to");
        Api.expect(200, admin.post(commands() + "/" + closed + "/signal", Map.of("signal", 9)));
    }

    @Test
    void theExecsTimeoutAndCapHoldAndBytesThatAreNotTextComeAsBase64() throws Exception {
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("POST", "/v1/sandboxes/" + id + "/exec/stream",
                sh("printf 1234567890; sleep 30", "timeout_secs", 1, "max_output_bytes", 5)).body())) {
            List<ServerSentEvents.Event> all = toTheEnd(events);
            assertEquals("12345", text(all, "stdout"));
            JsonNode exit = all.get(all.size() - 1).data();
            assertTrue(exit.get("timed_out").asBoolean(), exit.toString());
            assertTrue(exit.get("truncated").asBoolean(), exit.toString());
        }
        try (ServerSentEvents events = new ServerSentEvents(admin.stream("POST", "/v1/sandboxes/" + id + "/exec/stream",
                sh("printf '\\377\\376'")).body())) {
            ServerSentEvents.Event binary = toTheEnd(events).stream().filter(e -> e.name().equals("stdout")).findFirst().orElseThrow();
            assertNotNull(binary.data().get("b64"), binary.toString());
            assertEquals(List.of((byte) 0xff, (byte) 0xfe), toList(Base64.getDecoder().decode(binary.data().get("b64").asText())));
        }
    }

    private static List<Byte> toList(byte[] bytes) {
        List<Byte> list = new ArrayList<>();
        for (byte b : bytes) {
            list.add(b);
        }
        return list;
    }

    @Test
    void badOffsetsIdsRolesAndTenantsAreRefusedWithWhatToFix() throws Exception {
        String command = Api.expect(201, admin.post(commands(), sh("echo done"))).get("id").asText();
        Api.expect(200, admin.post(commands() + "/" + command + "/wait", null));
        assertEquals(400, admin.get(commands() + "/" + command + "/events?from=99999").status());
        Api outside = admin.outsideTheContract();
        assertEquals(400, outside.get(commands() + "/" + command + "/events?from=x").status());
        assertEquals(400, outside.get(commands() + "/cmd-x").status());
        assertEquals(404, admin.get(commands() + "/cmd-000000000000").status());
        assertEquals(400, outside.post(commands() + "/" + command + "/signal", Map.of("signal", 99)).status());
        assertEquals(400, outside.post(commands() + "/" + command + "/wait?timeout_secs=61", null).status());
        assertEquals(400, outside.post(commands(), Map.of("args", List.of())).status());
        assertEquals(403, admin.as("acme-user").get(commands()).status(), "commands are an admin's, as exec");
        assertEquals(404, admin.as("globex-admin").get(commands() + "/" + command).status(), "another tenant's sandbox is not there");
        assertEquals(404, admin.as("globex-admin").post(commands(), sh("true")).status());
    }

    @Test
    void aCommandOfADeletedSandboxEndsItsStream() throws Exception {
        String other = admin.createSandbox();
        String command = Api.expect(201, admin.post("/v1/sandboxes/" + other + "/commands", sh("exec sleep 300", "timeout_secs", 600)))
                .get("id").asText();
        try (ServerSentEvents events = new ServerSentEvents(
                admin.stream("GET", "/v1/sandboxes/" + other + "/commands/" + command + "/events", null).body())) {
            Api.expect(204, admin.delete("/v1/sandboxes/" + other));
            List<ServerSentEvents.Event> rest = toTheEnd(events);
            ServerSentEvents.Event last = rest.get(rest.size() - 1);
            assertTrue(last.name().equals("error") || "lost".equals(last.data().get("status").asText()), last.toString());
        }
        assertEquals(404, admin.get("/v1/sandboxes/" + other + "/commands").status());
    }
}
