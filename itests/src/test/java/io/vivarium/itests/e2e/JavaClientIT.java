package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.CommandInfo;
import io.vivarium.api.CommandOutput;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.VolumeInfo;
import io.vivarium.api.VolumeMount;
import io.vivarium.api.TerminalSize;
import io.vivarium.client.CommandEvent;
import io.vivarium.client.Ports;
import io.vivarium.client.Terminal;
import io.vivarium.client.VivariumClient;
import io.vivarium.client.VivariumException;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client (client/) against the assembled daemon: typed calls, errors as exceptions with the
 * daemon's message, streams; its exchanges judged by the contract ({@link JudgedHttpClient}).
 */
class JavaClientIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static VivariumClient vivarium;
    static Daemon daemon;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(dir.resolve("state"), List.of());
        // every exchange whose answer the client reads whole is judged by docs/openapi.json, as Api's are
        vivarium = VivariumClient.builder(URI.create(daemon.baseUrl())).token(daemon.adminToken()).httpClient(new JudgedHttpClient())
                .build();
    }

    @Test
    void aSandboxIsCreatedRunFilledBranchedForkedAndDeleted() throws Exception {
        assertTrue(vivarium.healthy());
        assertTrue(vivarium.backends().stream().anyMatch(b -> b.name().equals("procbox")));
        SandboxInfo sb = vivarium.sandboxes().create(null);
        assertEquals("running", vivarium.sandboxes().get(sb.id()).status());
        ExecResult r = vivarium.sandboxes().exec(sb.id(), List.of("sh", "-c", "echo out; echo err >&2; exit 3"));
        assertEquals("out\n", r.stdout());
        assertEquals("err\n", r.stderr());
        assertEquals(3, r.exitCode());
        byte[] bytes = {0, 1, 2, (byte) 0xff};
        vivarium.sandboxes().writeFile(sb.id(), "/work/data.bin", bytes);
        assertArrayEquals(bytes, vivarium.sandboxes().readFile(sb.id(), "/work/data.bin"));

        vivarium.sandboxes().branch(sb.id(), "client-it");
        List<SandboxInfo> children = vivarium.sandboxes().fork(new ForkRequest("client-it", 2, null, null, null, null, null));
        assertEquals(2, children.size());
        assertArrayEquals(bytes, vivarium.sandboxes().readFile(children.get(0).id(), "/work/data.bin"));
        for (SandboxInfo child : children) {
            vivarium.sandboxes().delete(child.id());
        }
        assertEquals(1, vivarium.snapshots().list().stream().filter(s -> s.tag().equals("client-it")).count());
        vivarium.snapshots().delete("client-it", false, false);
        vivarium.sandboxes().delete(sb.id());
        assertTrue(vivarium.sandboxes().list().stream().noneMatch(s -> s.id().equals(sb.id())));
    }

    @Test
    void aBuildAndAForkTellTheirProgressAsTheyGo() throws Exception {
        List<String> steps = new CopyOnWriteArrayList<>();
        SnapshotInfo built = vivarium.snapshots().build(new SnapshotRequest("client-progress", null, null,
                List.of("sh", "-c", "echo ready > /work/r"), null, null, null),
                (what, done, of) -> steps.add(done + "/" + of + " " + what));
        assertEquals("client-progress", built.tag());
        assertEquals(List.of("1/4 builder sandbox started", "2/4 setup ran", "3/4 boot wait over",
                "4/4 captured"), steps, "each step of the build, in order, as it was done");

        List<Integer> counted = new CopyOnWriteArrayList<>();
        List<String> names = new CopyOnWriteArrayList<>();
        List<SandboxInfo> children = vivarium.sandboxes().fork(new ForkRequest("client-progress", 5, null, null, null,
                null, null), (what, done, of) -> {
                    counted.add(done);
                    names.add(what + " of " + of);
                });
        assertEquals(5, children.size());
        assertEquals(List.of(0, 1, 2, 3, 4, 5), counted, "the start, then each child once, in order");
        assertTrue(names.stream().allMatch("children of 5"::equals), names.toString());
        assertEquals("ready\n", new String(vivarium.sandboxes().readFile(children.get(4).id(), "/work/r"),
                StandardCharsets.UTF_8));

        // what the caller can fix is an answer of its own, not a stream
        VivariumException unknown = assertThrows(VivariumException.class, () -> vivarium.sandboxes().fork(
                new ForkRequest("never-built", 2, null, null, null, null, null), Progress.NONE));
        assertEquals(404, unknown.status(), unknown.getMessage());
        for (SandboxInfo child : children) {
            vivarium.sandboxes().delete(child.id());
        }
        vivarium.snapshots().delete("client-progress", false, false);
    }

    @Test
    void anExposedPortIsReachedThroughTheClient() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft for a sandbox network");
        String id = SandboxPortsIT.serving(new Api(daemon.baseUrl(), daemon.adminToken()), SandboxPortsIT.PORT);
        Ports.PortUrls port = vivarium.ports().expose(id, SandboxPortsIT.PORT, Duration.ofMinutes(5));
        assertEquals(URI.create(daemon.baseUrl() + "/v1/sandboxes/" + id + "/ports/" + SandboxPortsIT.PORT + "/"), port.url());
        HttpResponse<byte[]> r = Api.judged(vivarium.ports().send(id, SandboxPortsIT.PORT, "POST", "/items?x=1",
                "hi".getBytes(StandardCharsets.UTF_8), Map.of("Content-Type", "text/plain")), "hi".getBytes(StandardCharsets.UTF_8));
        assertEquals(200, r.statusCode());
        String echoed = new String(r.body(), StandardCharsets.UTF_8);
        assertTrue(echoed.contains("\"path\": \"/items?x=1\"") && echoed.contains("\"body\": \"hi\""), echoed);
        HttpClient browser = HttpClient.newBuilder().cookieHandler(new java.net.CookieManager())
                .followRedirects(HttpClient.Redirect.NORMAL).build();
        HttpResponse<String> signed = Api.judged(browser.send(HttpRequest.newBuilder(port.signedUrl()).build(),
                HttpResponse.BodyHandlers.ofString()), null);
        assertEquals(200, signed.statusCode(), "the signed URL needs no token (a browser: its redirect, then the cookie)");
        assertEquals(List.of(SandboxPortsIT.PORT), vivarium.ports().list(id).stream().map(Ports.PortUrls::port).toList());
        assertEquals(SandboxPortsIT.PORT, vivarium.ports().get(id, SandboxPortsIT.PORT).port());
        vivarium.ports().close(id, SandboxPortsIT.PORT);
        VivariumException e = assertThrows(VivariumException.class, () -> vivarium.ports().get(id, SandboxPortsIT.PORT));
        assertEquals(404, e.status());
        vivarium.sandboxes().delete(id);
    }

    @Test
    void aVolumeOutlivesTheSandboxThatWroteIt() {
        VolumeInfo made = vivarium.volumes().create("client-it", 16);
        assertEquals(16, made.sizeMib());
        SandboxInfo writer = vivarium.sandboxes().create(new CreateSandboxRequest(null, null, null, null, null, null, null,
                null, List.of(new VolumeMount("client-it", "/data", "a", false)), null));
        assertEquals(List.of(new VolumeMount("client-it", "/data", "a", false)), writer.volumes());
        vivarium.sandboxes().exec(writer.id(), List.of("sh", "-c", "echo kept > /data/f"));
        assertEquals(writer.id(), vivarium.volumes().get("client-it").attachments().get(0).sandboxId());
        VivariumException inUse = assertThrows(VivariumException.class, () -> vivarium.volumes().delete("client-it"));
        assertEquals(409, inUse.status());
        vivarium.sandboxes().delete(writer.id());

        SandboxInfo reader = vivarium.sandboxes().create(new CreateSandboxRequest(null, null, null, null, null, null, null,
                null, List.of(new VolumeMount("client-it", "/data", null, true)), null));
        assertEquals("kept\n", vivarium.sandboxes().exec(reader.id(), List.of("cat", "/data/a/f")).stdout());
        vivarium.sandboxes().delete(reader.id());
        assertTrue(vivarium.volumes().list().stream().anyMatch(v -> v.name().equals("client-it")));
        vivarium.volumes().delete("client-it");
        assertEquals(404, assertThrows(VivariumException.class, () -> vivarium.volumes().get("client-it")).status());
    }

    @Test
    void anErrorIsAnExceptionWithTheStatusAndTheDaemonsMessage() {
        VivariumException missing = assertThrows(VivariumException.class, () -> vivarium.sandboxes().get("sb-000000000000"));
        assertEquals(404, missing.status());
        assertEquals("no sandbox sb-000000000000", missing.getMessage());
        VivariumException bad = assertThrows(VivariumException.class, () -> vivarium.snapshots().compact("same", "same"));
        assertEquals(400, bad.status());
        assertTrue(bad.getMessage().contains("to must differ"), bad.getMessage());
        VivariumException unauthorised = assertThrows(VivariumException.class,
                () -> VivariumClient.connect(URI.create(daemon.baseUrl()), "not-a-token").sandboxes().list());
        assertEquals(401, unauthorised.status());
        VivariumException nobody = assertThrows(VivariumException.class,
                () -> VivariumClient.connect(URI.create("http://127.0.0.1:1"), "x").sandboxes().list());
        assertEquals(0, nobody.status(), "a daemon that does not answer is status 0: " + nobody.getMessage());
    }

    @Test
    void aStreamedExecHandsOverEachEventAndABackgroundCommandReadsItsStdin() throws Exception {
        SandboxInfo sb = vivarium.sandboxes().create(null);
        List<CommandEvent> events = new ArrayList<>();
        CommandInfo ended = vivarium.commands().execStream(sb.id(),
                new ExecRequest(List.of("sh", "-c", "echo one; sleep 1; echo two; exit 5"), null, null, null, null, null), events::add);
        assertEquals(5, ended.exitCode());
        StringBuilder out = new StringBuilder();
        events.stream().filter(e -> e.name().equals("stdout")).forEach(e -> out.append(e.text()));
        assertEquals("one\ntwo\n", out.toString());
        assertEquals("started", events.get(0).name());

        CommandInfo cat = vivarium.commands().start(sb.id(), new ExecRequest(List.of("cat"), 60, null, null, null, null), true);
        vivarium.commands().writeStdin(sb.id(), cat.id(), "hello ".getBytes(StandardCharsets.UTF_8), false);
        vivarium.commands().writeStdin(sb.id(), cat.id(), "world".getBytes(StandardCharsets.UTF_8), true);
        assertEquals(0, vivarium.commands().await(sb.id(), cat.id(), Duration.ofSeconds(30)).exitCode());
        StringBuilder resumed = new StringBuilder();
        vivarium.commands().events(sb.id(), cat.id(), 6, e -> {
            if (e.isOutput()) {
                resumed.append(e.text());
            }
        });
        assertEquals("world", resumed.toString(), "read from an offset on");
        CommandOutput all = vivarium.commands().output(sb.id(), cat.id(), 0, Duration.ZERO);
        assertEquals("hello world", new String(all.chunks().get(0).data(), StandardCharsets.UTF_8)
                + (all.chunks().size() > 1 ? new String(all.chunks().get(1).data(), StandardCharsets.UTF_8) : ""));
        assertEquals(2, vivarium.commands().list(sb.id()).size());
        vivarium.sandboxes().delete(sb.id());
    }

    @Test
    void aTerminalShowsWhatItRunsTakesKeysAndResizes() throws Exception {
        SandboxInfo sb = vivarium.sandboxes().create(null);
        StringBuffer screen = new StringBuffer();
        List<String> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (Terminal t = vivarium.commands().terminal(sb.id(), List.of("sh", "-c", "stty size; read x; stty size; exit 4"),
                new TerminalSize(12, 34), b -> screen.append(new String(b, StandardCharsets.UTF_8)), errors::add)) {
            assertTrue(t.command(Duration.ofSeconds(20)).terminal());
            t.resize(new TerminalSize(56, 78));
            t.signal(0); // not a signal: refused, said as an error message, and the terminal goes on
            t.type("\n");
            CommandInfo ended = t.await(Duration.ofSeconds(20));
            assertEquals(4, ended.exitCode());
            assertTrue(screen.toString().contains("12 34") && screen.toString().contains("56 78"), screen.toString());
            assertEquals(1, errors.size(), errors.toString());
        }
        VivariumException refused = assertThrows(VivariumException.class, () -> vivarium.commands().terminal("sb-000000000000",
                List.of(), TerminalSize.DEFAULT, b -> { }, e -> { }));
        assertEquals(404, refused.status());
        vivarium.sandboxes().delete(sb.id());
    }
}
