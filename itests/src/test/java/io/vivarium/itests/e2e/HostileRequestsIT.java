package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Requests a careless or hostile client sends, written as raw bytes on a socket (Java's
 * HttpClient refuses to send most of them): each must be refused with the right status and a JSON
 * body {@code {"error": "..."}}, whether our servlet answers or Jetty refuses it before any
 * servlet runs. They are made to be refused, so each is sent through {@link #sendHostile}, which
 * says so: the contract (docs/openapi.json) judges only the answer, which must be one the operation
 * documents where the document describes the request, and the document's error body where it does
 * not (an unknown path or method, a malformed parameter or body, not HTTP/1.1).
 */
class HostileRequestsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static String token;

    @BeforeAll
    static void start() throws Exception {
        daemon = daemons.start(dir.resolve("state"));
        token = daemon.adminToken();
    }

    record Raw(int status, String head, byte[] body) {
        String header(String name) {
            String prefix = name.toLowerCase(Locale.ROOT) + ":";
            return head.lines().filter(l -> l.toLowerCase(Locale.ROOT).startsWith(prefix))
                    .map(l -> l.substring(prefix.length()).strip()).findFirst().orElse(null);
        }
    }

    /** Bad paths below routes that exist, each refused with 400 before any route runs. */
    private static final List<String> BAD_TAILS = List.of(
            "a%2Fb",        // encoded '/'
            "a%2fb",
            "a%00b",        // NUL
            "a%0Ab",        // line feed
            "a%0D%0Ab",
            "a%zz",         // malformed escapes
            "a%",
            "a%4",
            "%u0041",
            "%2e%2e",       // encoded '..' and '.'
            "%2E%2E/x",
            "..%2Fx",
            "%2e",
            "a%5Cb",        // encoded '\'
            "a\\b",
            "a b");

    private static final List<String[]> ROUTES = List.of(
            new String[] {"GET", "/v1/sandboxes/"},
            new String[] {"DELETE", "/v1/sandboxes/"},
            new String[] {"POST", "/v1/features/"},
            new String[] {"PUT", "/v1/plugins/"},
            new String[] {"GET", "/"});

    static Stream<Arguments> badPaths() {
        List<Arguments> cases = new ArrayList<>();
        for (String[] route : ROUTES) {
            for (String tail : BAD_TAILS) {
                cases.add(Arguments.of(route[0], route[1] + tail));
            }
        }
        for (String method : List.of("GET", "POST", "DELETE")) {
            cases.add(Arguments.of(method, "/v1/sandboxes//exec"));  // empty segment
            cases.add(Arguments.of(method, "//v1/sandboxes"));
            cases.add(Arguments.of(method, "/v1/../../version"));  // above the root
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("badPaths")
    void badPathsAreRefusedInJson(String method, String path) throws Exception {
        Raw r = sendHostile(method + " " + path + " HTTP/1.1", List.of(), new byte[0]);
        assertEquals(400, r.status(), method + " " + path + ": " + r.head());
        assertJsonError(r, method + " " + path);
    }

    static Stream<Arguments> otherRefusals() {
        return Stream.of(
                Arguments.of("unknown path", "GET /v1/nope HTTP/1.1", List.of(), 0, 404),
                Arguments.of("unknown top-level path", "POST /nope/at/all HTTP/1.1", List.of(), 0, 404),
                // dot segments inside the root are resolved (RFC 3986) before routing
                Arguments.of("resolved dot segments", "DELETE /v1/sandboxes/x/../../nope HTTP/1.1", List.of(), 0, 404),
                Arguments.of("method not allowed", "PATCH /v1/sandboxes HTTP/1.1", List.of(), 0, 405),
                Arguments.of("unknown method", "BREW /v1/sandboxes HTTP/1.1", List.of(), 0, 405),
                Arguments.of("body too big", "POST /v1/sandboxes HTTP/1.1", List.of(), (1 << 20) + 1, 413),
                Arguments.of("URI too long", "GET /v1/sandboxes/" + "a".repeat(70_000) + " HTTP/1.1", List.of(), 0, 414),
                Arguments.of("headers too big", "GET /v1/sandboxes HTTP/1.1", List.of("X-Big: " + "b".repeat(70_000)), 0, 431),
                Arguments.of("too many headers", "GET /v1/sandboxes HTTP/1.1",
                        Stream.generate(() -> "X-Many: " + "c".repeat(100)).limit(1000).toList(), 0, 431),
                Arguments.of("garbage request line", "HELLO", List.of(), 0, 400),
                Arguments.of("unknown HTTP version", "GET /v1/sandboxes HTTP/7.3", List.of(), 0, 505),
                Arguments.of("control character in the request line", "GET /v1/sand\u0001boxes HTTP/1.1", List.of(), 0, 400),
                Arguments.of("bad Content-Length", "POST /v1/sandboxes HTTP/1.1", List.of("Content-Length: lots"), -1, 400),
                Arguments.of("malformed query escape", "GET /v1/sandboxes/x/files?path=%zz HTTP/1.1", List.of(), 0, 400));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("otherRefusals")
    void otherRefusalsAreJson(String what, String requestLine, List<String> headers, int bodyBytes, int status) throws Exception {
        Raw r = sendHostile(requestLine, headers, bodyBytes < 0 ? null : new byte[bodyBytes]);
        assertEquals(status, r.status(), what + ": " + r.head());
        assertJsonError(r, what);
    }

    /**
     * An upload refused before its body is read (no token, no such route) is read away before the
     * answer, up to a bound: the connection is not closed under a client still sending, whose
     * writes would then fail and whose answer a reset could discard before it is read.
     */
    @Test
    void anUploadRefusedBeforeItsBodyIsReadIsReadAwayFirst() throws Exception {
        URI base = URI.create(daemon.baseUrl());
        for (String[] refused : List.of(new String[] { "/v1/plugins/io.vivarium.nothing", "", "401" },
                new String[] { "/v1/no-such-route", "Authorization: Bearer " + token + "\r\n", "404" })) {
            try (Socket s = new Socket(base.getHost(), base.getPort())) {
                s.setSoTimeout(20_000);
                byte[] body = new byte[8 << 20];
                String requestLine = "PUT " + refused[0] + " HTTP/1.1";
                String head = requestLine + "\r\nHost: " + base.getHost() + "\r\n" + refused[1]
                        + "Content-Length: " + body.length + "\r\nConnection: close\r\n\r\n";
                OutputStream out = s.getOutputStream();
                out.write(head.getBytes(StandardCharsets.ISO_8859_1));
                out.write(body); // fails with a broken pipe if the edge closed without reading
                out.flush();
                Raw r = parse(readAll(s.getInputStream()));
                assertTheAnswerIsDocumented(requestLine, body, r);
                assertEquals(Integer.parseInt(refused[2]), r.status(), refused[0] + ": " + r.head());
                assertJsonError(r, refused[0]);
            }
        }
    }

    @Test
    void aNormalRequestStillWorksAfterAllThat() throws Exception {
        Raw r = send("GET /v1/sandboxes HTTP/1.1", List.of(), new byte[0]);
        OpenApiContract.Verdict v = OpenApiContract.docs().judge("GET", "/v1/sandboxes", null, null, r.status(),
                r.header("Content-Type"), r.body());
        assertTrue(v.conforms(), "a documented request, answered as documented: " + v.problems());
        assertEquals(200, r.status(), r.head());
        assertTrue(Api.JSON.readTree(r.body()).isArray());
    }

    /**
     * The handler is installed by the http bundle: after that bundle is updated at run time, the
     * new revision installs its own (and the old one put back what it replaced).
     */
    @Test
    void stillJsonAfterTheHttpBundleIsUpdated() throws Exception {
        Api admin = new Api(daemon.baseUrl(), token);
        Api.Response updated = admin.sendBytes("PUT", "/v1/plugins/io.vivarium.http",
                BundleJars.withVersion(BundleJars.shipped("http"), "0.1.0.hostile"));
        assertEquals(200, updated.status(), String.valueOf(updated.body()));
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (admin.get("/v1/sandboxes").status() != 200 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        for (String path : List.of("/v1/sandboxes/a%2Fb", "/v1/sandboxes//exec", "/v1/sandboxes/a%zz")) {
            Raw r = sendHostile("GET " + path + " HTTP/1.1", List.of(), new byte[0]);
            assertEquals(400, r.status(), path + ": " + r.head());
            assertJsonError(r, path + " after the update");
        }
    }

    private static void assertJsonError(Raw r, String what) throws IOException {
        String type = r.header("Content-Type");
        assertTrue(type != null && type.startsWith("application/json"), what + ": Content-Type " + type + "\n" + r.head());
        JsonNode body = Api.JSON.readTree(r.body());
        assertTrue(body != null && body.isObject(), what + ": body is not a JSON object: " + new String(r.body(), StandardCharsets.UTF_8));
        JsonNode error = body.get("error");
        assertTrue(error != null && error.isTextual() && !error.asText().isBlank(), what + ": no error string in " + body);
    }

    /** {@link #send}s a request made to be refused, and judges its answer by the contract ({@link #assertTheAnswerIsDocumented}). */
    private static Raw sendHostile(String requestLine, List<String> headers, byte[] body) throws IOException {
        Raw r = send(requestLine, headers, body);
        assertTheAnswerIsDocumented(requestLine, body, r);
        return r;
    }

    /**
     * The answer to a hostile request, by the contract: where the document describes the request (a
     * documented operation, valid parameters and body, HTTP/1.1), one the operation documents;
     * else the document's error body.
     */
    private static void assertTheAnswerIsDocumented(String requestLine, byte[] body, Raw r) {
        String[] line = requestLine.split(" ", 3);
        OpenApiContract contract = OpenApiContract.docs();
        OpenApiContract.Verdict v = contract.judge(line[0], line.length > 1 ? line[1] : "", null, body, r.status(),
                r.header("Content-Type"), r.body());
        boolean described = v.request().isEmpty() && line.length == 3 && line[2].equals("HTTP/1.1");
        List<String> problems = described ? v.answer() : contract.errorAnswer(r.status(), r.header("Content-Type"), r.body());
        assertTrue(problems.isEmpty(), abbreviated(requestLine) + " → " + r.status() + ", not as docs/openapi.json says: " + problems);
    }

    private static String abbreviated(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }

    /**
     * Writes the request line, a Host and bearer header, {@code headers} and (unless
     * {@code body} is null) a Content-Length and the body, then reads the whole answer.
     */
    private static Raw send(String requestLine, List<String> headers, byte[] body) throws IOException {
        URI base = URI.create(daemon.baseUrl());
        try (Socket s = new Socket(base.getHost(), base.getPort())) {
            s.setSoTimeout(20_000);
            StringBuilder head = new StringBuilder(requestLine).append("\r\n")
                    .append("Host: ").append(base.getHost()).append("\r\n")
                    .append("Authorization: Bearer ").append(token).append("\r\n")
                    .append("Connection: close\r\n");
            headers.forEach(h -> head.append(h).append("\r\n"));
            if (body != null) {
                head.append("Content-Length: ").append(body.length).append("\r\n");
            }
            head.append("\r\n");
            OutputStream out = s.getOutputStream();
            try {
                out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
                if (body != null) {
                    out.write(body);
                }
                out.flush();
            } catch (IOException e) {
                // the server may answer and close before it has read everything: read its answer
            }
            return parse(readAll(s.getInputStream()));
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        try {
            for (int n; (n = in.read(chunk)) >= 0; ) {
                buf.write(chunk, 0, n);
            }
        } catch (java.net.SocketException e) {
            // a reset after the answer arrived (the server closed with unread request bytes)
            if (buf.size() == 0) {
                throw e;
            }
        }
        return buf.toByteArray();
    }

    private static Raw parse(byte[] answer) throws IOException {
        String text = new String(answer, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new IOException("no complete HTTP answer: " + text);
        }
        String head = text.substring(0, end);
        String[] status = head.lines().findFirst().orElseThrow().split(" ", 3);
        byte[] body = java.util.Arrays.copyOfRange(answer, end + 4, answer.length);
        Raw r = new Raw(Integer.parseInt(status[1]), head, body);
        if ("chunked".equalsIgnoreCase(r.header("Transfer-Encoding"))) {
            return new Raw(r.status(), head, dechunk(body));
        }
        return r;
    }

    private static byte[] dechunk(byte[] body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String text = new String(body, StandardCharsets.ISO_8859_1);
        int at = 0;
        while (true) {
            int eol = text.indexOf("\r\n", at);
            int size = Integer.parseInt(text.substring(at, eol).split(";")[0].strip(), 16);
            if (size == 0) {
                return out.toByteArray();
            }
            out.write(body, eol + 2, size);
            at = eol + 2 + size + 2;
        }
    }
}
