package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.CookieManager;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exposed ports on a real daemon: a server a procbox sandbox runs (Python's, HTTP/1.1 and a
 * WebSocket echo) is reached through {@code /v1/sandboxes/{id}/ports/{port}/...} with a bearer
 * token and with the signed URL (then by its cookie), never with a token signed for another port or
 * for anything but the port; its requests arrive without the caller's credentials and with the
 * forwarding headers; a closed port refuses its URLs; a sandbox without a network is a 409, nothing
 * listening a 502; a daemon killed and started again keeps the port and its signed URL working.
 */
class SandboxPortsIT {
    static final String SERVER = """
            import base64, hashlib, json, struct, sys, time
            from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
            class H(BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                disable_nagle_algorithm = True  # headers and body are two writes: without it, keep-alive answers wait ~40 ms
                def log_message(self, *a): pass
                def answer(self, body=b""):
                    if self.headers.get("Upgrade", "").lower() == "websocket":
                        return self.websocket()
                    if self.path == "/stream":
                        return self.stream()
                    if self.path == "/redirect":
                        self.send_response(302)
                        self.send_header("Location", "/landing")
                        self.send_header("Content-Length", "0")
                        return self.end_headers()
                    out = json.dumps({"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                      "body": body.decode()}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(out)
                def stream(self):
                    # server-sent events for ever, chunked (a client keeps such a connection once the answer ended,
                    # so closing a half-read one means reading on); says so once its reader left
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.close_connection = True
                    try:
                        n = 0
                        while True:
                            event = b"data: %d\\n\\n" % n
                            self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(event), event)); self.wfile.flush(); n += 1
                            time.sleep(0.05)
                    except OSError:
                        open("/work/stream-ended", "w").write("ended")
                def do_GET(self): self.answer()
                do_OPTIONS = do_HEAD = do_GET
                def do_POST(self): self.answer(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                do_PUT = do_PATCH = do_DELETE = do_POST
                def websocket(self):
                    accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"]
                        + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
                    self.send_response(101)
                    self.send_header("Upgrade", "websocket")
                    self.send_header("Connection", "Upgrade")
                    self.send_header("Sec-WebSocket-Accept", accept)
                    self.end_headers()
                    self.wfile.flush()
                    self.close_connection = True
                    while True:
                        h = self.rfile.read(2)
                        if len(h) < 2: return
                        op, n = h[0] & 15, h[1] & 127
                        if n == 126: n = struct.unpack(">H", self.rfile.read(2))[0]
                        elif n == 127: n = struct.unpack(">Q", self.rfile.read(8))[0]
                        mask = self.rfile.read(4)
                        data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
                        if op == 8:
                            self.wfile.write(b"\\x88\\x00"); self.wfile.flush(); return
                        reply = b"echo " + data
                        size = bytes([len(reply)]) if len(reply) < 126 else b"\\x7e" + struct.pack(">H", len(reply))
                        self.wfile.write(bytes([0x80 | op]) + size + reply); self.wfile.flush()
            ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
            """;
    static final int PORT = 8000;
    private static final HttpClient ANONYMOUS = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/nft")),
                "needs nftables' nft for sandbox networks (apt-get install nftables)");
        daemon = daemons.start(dir.resolve("state"), List.of());
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    /** A sandbox with an address and no way out, running {@link #SERVER} on {@code port}. */
    static String serving(Api through, int port) throws Exception {
        String id = through.createSandbox(Map.of("network", Map.of("mode", "egress", "allow", List.of())));
        String sb = "/v1/sandboxes/" + id;
        Api.expect(204, through.sendBytes("PUT", sb + "/files?path=/work/server.py", SERVER.getBytes(StandardCharsets.UTF_8)));
        Api.expect(201, through.post(sb + "/commands", Map.of("args", List.of("python3", "/work/server.py", Integer.toString(port)))));
        String probe = "import socket, time\nfor _ in range(200):\n    try:\n        socket.create_connection(('127.0.0.1', " + port
                + "), timeout=1); break\n    except OSError: time.sleep(0.05)\n";
        Api.expect(200, through.post(sb + "/exec", Map.of("args", List.of("python3", "-c", probe), "timeout_secs", 30)));
        return id;
    }

    static JsonNode echo(HttpResponse<byte[]> r) throws Exception {
        assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return Api.JSON.readTree(r.body());
    }

    private static HttpResponse<byte[]> anonymous(String url, String... headers) throws Exception {
        return Api.judged(ANONYMOUS.send(get(url, headers), HttpResponse.BodyHandlers.ofByteArray()), null);
    }

    /** {@link #anonymous}, for a request the document does not describe (a port's token on another route). */
    private static HttpResponse<byte[]> anonymousOutsideTheContract(String url) throws Exception {
        return Api.judgedOutsideTheContract(ANONYMOUS.send(get(url), HttpResponse.BodyHandlers.ofByteArray()), null);
    }

    private static HttpRequest get(String url, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + url)).timeout(Duration.ofSeconds(30));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return b.build();
    }

    @Test
    void aServerInTheSandboxIsReachedThroughTheDaemon() throws Exception {
        String id = serving(api, PORT);
        String sb = "/v1/sandboxes/" + id;
        JsonNode port = Api.expect(201, api.post(sb + "/ports", Map.of("port", PORT)));
        String base = sb + "/ports/" + PORT + "/";
        assertEquals(base, port.get("url").asText());
        assertEquals(List.of(PORT), Api.expect(200, api.get(sb + "/ports")).findValuesAsText("port").stream().map(Integer::valueOf).toList());

        JsonNode got = echo(api.raw("GET", base + "some/page?x=1&y=%20z", null));
        assertEquals("/some/page?x=1&y=%20z", got.get("path").asText(), "the rest of the path and the query, as sent");
        JsonNode headers = got.get("headers");
        assertFalse(headers.has("authorization"), "the caller's bearer token stays with the daemon: " + headers);
        assertEquals(base, headers.get("x-forwarded-prefix").asText());
        assertEquals("http", headers.get("x-forwarded-proto").asText());

        byte[] big = "0123456789abcdef".repeat(1 << 16).getBytes(StandardCharsets.US_ASCII); // 1 MiB
        JsonNode posted = echo(api.raw("POST", base + "upload", big));
        assertEquals("POST", posted.get("method").asText());
        assertEquals(big.length, posted.get("body").asText().length(), "the whole body, streamed through");
        for (String method : List.of("PUT", "PATCH", "DELETE")) {
            assertEquals(method, echo(api.raw(method, base + "m", "b".getBytes(StandardCharsets.UTF_8))).get("method").asText());
        }
        assertEquals("OPTIONS", echo(api.raw("OPTIONS", base, null)).get("method").asText());
        assertEquals(200, api.raw("HEAD", base, null).statusCode());

        try (var socket = new Echo(daemon.baseUrl().replaceFirst("^http", "ws") + base + "ws", daemon.adminToken())) {
            assertEquals("echo hello", socket.exchange("hello"));
            assertEquals("echo " + "x".repeat(1000), socket.exchange("x".repeat(1000)));
        }

        HttpResponse<byte[]> redirected = anonymous(base + "redirect", "Authorization", "Bearer " + daemon.adminToken());
        assertEquals(302, redirected.statusCode());
        assertEquals(base + "landing", redirected.headers().firstValue("Location").orElseThrow(),
                "a redirect to the server's root stays under the port's path");

        Api.expect(204, api.delete(sb + "/ports/" + PORT));
        Api.Response closed = api.get(base);
        assertEquals(404, closed.status());
        assertTrue(closed.error().contains("not exposed"), closed.error());
        api.delete(sb);
    }

    @Test
    void anEndlessStreamWhoseCallerLeftEndsAtTheServerToo() throws Exception {
        String id = serving(api, PORT);
        String sb = "/v1/sandboxes/" + id;
        Api.expect(201, api.post(sb + "/ports", Map.of("port", PORT)));
        HttpResponse<java.io.InputStream> r = Api.judged(ANONYMOUS.send(get(sb + "/ports/" + PORT + "/stream",
                "Authorization", "Bearer " + daemon.adminToken()), HttpResponse.BodyHandlers.ofInputStream()), null);
        assertEquals(200, r.statusCode());
        try (java.io.InputStream in = r.body()) {
            assertEquals("data: 0\n\ndata: 1\n\n", new String(in.readNBytes(18), StandardCharsets.UTF_8),
                    "events passed on as the server writes them");
        }
        // the daemon drops the exchange with its connection: it must not go on reading a stream nobody reads
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        String ended = "";
        while (!ended.equals("ended") && System.nanoTime() < deadline) {
            Thread.sleep(200);
            ended = Api.sh(api, id, "cat /work/stream-ended 2>/dev/null || true");
        }
        assertEquals("ended", ended, "the server saw its stream's reader leave once the caller did");
        Api.expect(204, api.delete(sb));
    }

    @Test
    void aSignedUrlReachesItsPortAloneUntilThePortCloses() throws Exception {
        String id = serving(api, PORT);
        String sb = "/v1/sandboxes/" + id;
        JsonNode port = Api.expect(201, api.post(sb + "/ports", Map.of("port", PORT, "expires_in_secs", 600)));
        String signed = port.get("signed_url").asText();
        String token = signed.substring(signed.indexOf("vivarium_token=") + "vivarium_token=".length());

        HttpResponse<byte[]> first = anonymous(signed + "&page=2");
        assertEquals(303, first.statusCode(), "a page opened by its signed URL is sent on without the token in its URL");
        assertEquals(sb + "/ports/" + PORT + "/?page=2", first.headers().firstValue("Location").orElseThrow());
        String cookie = first.headers().firstValue("Set-Cookie").orElseThrow();
        assertTrue(cookie.startsWith("vivarium_token=" + token + "; Path=" + sb + "/ports/" + PORT + "/"), cookie);
        JsonNode got = echo(anonymous(first.headers().firstValue("Location").orElseThrow(), "Cookie", "vivarium_token=" + token));
        assertEquals("/?page=2", got.get("path").asText(), "the token is not passed on");
        HttpResponse<byte[]> post = Api.judged(ANONYMOUS.send(HttpRequest.newBuilder(URI.create(daemon.baseUrl() + signed))
                .POST(HttpRequest.BodyPublishers.ofString("b")).build(), HttpResponse.BodyHandlers.ofByteArray()),
                "b".getBytes(StandardCharsets.UTF_8));
        assertEquals("POST", echo(post).get("method").asText(), "a POST with the token in its URL goes through at once");
        JsonNode next = echo(anonymous(sb + "/ports/" + PORT + "/next.js", "Cookie", "vivarium_token=" + token + "; theme=dark"));
        assertEquals("theme=dark", next.get("headers").get("cookie").asText(), "the page's own cookies go through, ours not");

        Api.expect(201, api.post(sb + "/ports", Map.of("port", PORT + 1)));
        assertEquals(401, anonymous(sb + "/ports/" + (PORT + 1) + "/?vivarium_token=" + token).statusCode(), "another port");
        assertEquals(401, anonymousOutsideTheContract(sb + "?vivarium_token=" + token).statusCode(), "the sandbox's own routes");
        assertEquals(401, anonymousOutsideTheContract(sb + "/ports?vivarium_token=" + token).statusCode());
        assertEquals(401, anonymousOutsideTheContract("/version?vivarium_token=" + token).statusCode());
        String forged = token.substring(0, token.length() - 2) + (token.endsWith("AA") ? "BB" : "AA");
        HttpResponse<byte[]> refused = anonymous(sb + "/ports/" + PORT + "/?vivarium_token=" + forged);
        assertEquals(401, refused.statusCode());
        assertTrue(new String(refused.body(), StandardCharsets.UTF_8).contains("not valid"), new String(refused.body(), StandardCharsets.UTF_8));
        String expired = "1." + token.substring(token.indexOf('.') + 1);
        assertEquals(401, anonymous(sb + "/ports/" + PORT + "/?vivarium_token=" + expired).statusCode());

        Api.expect(204, api.delete(sb + "/ports/" + PORT));
        assertEquals(401, anonymous(signed).statusCode(), "a closed port's signed URL is refused");
        String again = Api.expect(201, api.post(sb + "/ports", Map.of("port", PORT))).get("signed_url").asText();
        assertEquals(401, anonymous(signed).statusCode(), "exposing it again does not bring the old URL back");
        assertEquals(303, anonymous(again).statusCode());
        api.delete(sb);
    }

    @Test
    void refusalsSayWhatToFix() throws Exception {
        String isolated = api.createSandbox();
        Api.Response noNetwork = api.post("/v1/sandboxes/" + isolated + "/ports", Map.of("port", PORT));
        assertEquals(409, noNetwork.status());
        assertTrue(noNetwork.error().contains("egress"), noNetwork.error());
        api.delete("/v1/sandboxes/" + isolated);

        String id = api.createSandbox(Map.of("network", Map.of("mode", "egress", "allow", List.of())));
        String sb = "/v1/sandboxes/" + id;
        Api outside = api.outsideTheContract();
        assertEquals(400, outside.post(sb + "/ports", Map.of("port", 0)).status());
        assertEquals(400, outside.post(sb + "/ports", Map.of("port", 70000)).status());
        assertEquals(400, outside.post(sb + "/ports", Map.of("port", PORT, "expires_in_secs", 0)).status());
        assertEquals(400, outside.post(sb + "/ports", "{}").status());
        assertEquals(404, api.get(sb + "/ports/" + PORT).status());
        assertEquals(404, api.get(sb + "/ports/" + PORT + "/").status());
        assertEquals(404, api.delete(sb + "/ports/" + PORT).status());

        Api.expect(201, api.post(sb + "/ports", Map.of("port", 9)));
        Api.Response nobody = api.get(sb + "/ports/9/");
        assertEquals(502, nobody.status());
        assertTrue(nobody.error().contains("nothing answers on port 9"), nobody.error());
        api.delete(sb);
        assertEquals(404, api.get(sb + "/ports/9/").status());
    }

    @Test
    void aPortAndItsSignedUrlOutliveADaemonKilledAndStartedAgain() throws Exception {
        Path state = dir.resolve("state-restart");
        Daemon first = daemons.start(state, List.of());
        Api before = new Api(first.baseUrl(), first.adminToken());
        String id = serving(before, PORT);
        String signed = Api.expect(201, before.post("/v1/sandboxes/" + id + "/ports", Map.of("port", PORT))).get("signed_url").asText();
        first.kill9();
        Daemon second = daemons.start(state, List.of());
        Api after = new Api(second.baseUrl(), second.adminToken());
        assertEquals(List.of(String.valueOf(PORT)), Api.expect(200, after.get("/v1/sandboxes/" + id + "/ports")).findValuesAsText("port"));
        HttpClient browser = HttpClient.newBuilder().cookieHandler(new CookieManager())
                .followRedirects(HttpClient.Redirect.NORMAL).build();
        HttpResponse<byte[]> r = Api.judged(browser.send(HttpRequest.newBuilder(URI.create(second.baseUrl() + signed)).build(),
                HttpResponse.BodyHandlers.ofByteArray()), null);
        assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        after.delete("/v1/sandboxes/" + id);
    }

    /** A WebSocket client that sends a text and waits for the answer. */
    static final class Echo implements WebSocket.Listener, AutoCloseable {
        private final LinkedBlockingQueue<String> received = new LinkedBlockingQueue<>();
        private final StringBuilder partial = new StringBuilder();
        private final WebSocket socket;

        Echo(String url, String token) throws Exception {
            socket = Bounded.get(HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + token)
                    .buildAsync(URI.create(url), this), Duration.ofSeconds(30), "the WebSocket through the exposed port opens");
        }

        String exchange(String text) throws Exception {
            Bounded.get(socket.sendText(text, true), Duration.ofSeconds(10), "the text is sent");
            String answer = received.poll(30, TimeUnit.SECONDS);
            assertTrue(answer != null, "no answer through the exposed port's WebSocket");
            return answer;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                received.add(partial.toString());
                partial.setLength(0);
            }
            ws.request(1);
            return null;
        }

        @Override
        public void close() {
            socket.sendClose(WebSocket.NORMAL_CLOSURE, "done");
        }
    }
}
