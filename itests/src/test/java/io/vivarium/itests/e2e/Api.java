package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Path;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A tiny HTTP client for the daemon's JSON API that holds the daemon to its contract: every
 * exchange is judged by docs/openapi.json ({@link OpenApiContract}: the request's path, method,
 * parameters and body; the answer's status, content type and body), and whatever the document does
 * not allow is an AssertionError at the call. So every test that talks to the daemon through it
 * checks the contract on the way.
 *
 * <p>A request a test sends on purpose although the document does not describe it (an unknown path,
 * a wrong method, a body its schema refuses) says so at its call site, through
 * {@link #outsideTheContract()}: the document must then refuse the request (else the call belongs in
 * the contract), and the answer must still be the documented error of the operation, or the error
 * body where the path or method is no operation at all. A vendor's surface (a prefix other than
 * those docs/openapi.json documents) answers by its own contract, and is reached through
 * {@link #onAVendorSurface()}, which judges nothing and refuses a path the document has.
 *
 * <p>Benchmarks time calls through this client; their profile turns the judging off
 * ({@code -Dvivarium.itests.contract=false}), so that it is not part of what they measure.
 */
final class Api {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient PLAIN = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** For a fleet node's own port (HTTPS with its self-signed certificate): the tests pin nothing, the master does. */
    private static final HttpClient TO_A_NODE = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
            .sslContext(AnyCertificate.context()).build();
    private static final boolean JUDGED = Boolean.parseBoolean(System.getProperty("vivarium.itests.contract", "true"));

    record Response(int status, JsonNode body, HttpResponse<String> raw) {
        String error() {
            return body == null || body.get("error") == null ? null : body.get("error").asText();
        }
    }

    /** How exchanges are judged. */
    private enum Judging {
        /** The request and its answer as the document says. */
        CONTRACT,
        /** A request the document refuses, answered with the documented error. */
        OUTSIDE_THE_CONTRACT,
        /** Not by docs/openapi.json: a vendor's surface. */
        VENDOR_SURFACE
    }

    private final String baseUrl;
    private final String token;
    private final Judging judging;
    /** Where the operations that answered a conforming success are added; null for nowhere. */
    private final Set<String> succeeded;

    Api(String baseUrl, String token) {
        this(baseUrl, token, Judging.CONTRACT, null);
    }

    private Api(String baseUrl, String token, Judging judging, Set<String> succeeded) {
        this.baseUrl = baseUrl;
        this.token = token;
        this.judging = judging;
        this.succeeded = succeeded;
    }

    /** The same client with another bearer token (null for none). */
    Api as(String otherToken) {
        return new Api(baseUrl, otherToken, judging, succeeded);
    }

    /**
     * The same client for requests the document deliberately does not describe: each must be one
     * the document refuses, and its answer the documented error.
     */
    Api outsideTheContract() {
        return new Api(baseUrl, token, Judging.OUTSIDE_THE_CONTRACT, succeeded);
    }

    /** The same client for the routes of a vendor's surface, which docs/openapi.json does not describe: not judged. */
    Api onAVendorSurface() {
        return new Api(baseUrl, token, Judging.VENDOR_SURFACE, succeeded);
    }

    /** The same client, adding to {@code operations} ("METHOD /template") each operation that answers a conforming success. */
    Api recordingSuccessesIn(Set<String> operations) {
        return new Api(baseUrl, token, judging, operations);
    }

    private HttpClient client() {
        return baseUrl.startsWith("https:") ? TO_A_NODE : PLAIN;
    }

    Response get(String path) throws IOException, InterruptedException {
        return send("GET", path, null);
    }

    Response delete(String path) throws IOException, InterruptedException {
        return send("DELETE", path, null);
    }

    /** A JSON body: a string as it is, anything else as Jackson writes it; null for no body. */
    Response post(String path, Object body) throws IOException, InterruptedException {
        return send("POST", path, body == null || body instanceof String ? (String) body : JSON.writeValueAsString(body));
    }

    /** A JSON body as it is (null for none). */
    Response send(String method, String path, String body) throws IOException, InterruptedException {
        return exchange(method, path, "application/json", body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    /** A raw body: a bundle jar for the plugin routes, a file's content for the others (see {@link #rawType}). */
    Response sendBytes(String method, String path, byte[] body) throws IOException, InterruptedException {
        return exchange(method, path, rawType(path), body);
    }

    private Response exchange(String method, String path, String type, byte[] body) throws IOException, InterruptedException {
        HttpResponse<String> r = client().send(request(method, path, type, body, false), HttpResponse.BodyHandlers.ofString());
        judge(method, path, type, body, r.statusCode(), r.headers(), r.body().getBytes(StandardCharsets.UTF_8));
        boolean json = r.headers().firstValue("Content-Type").orElse("").startsWith("application/json");
        JsonNode node = r.body().isEmpty() || !json ? null : JSON.readTree(r.body());
        return new Response(r.statusCode(), node, r);
    }

    /** A request whose answer is kept as bytes (a file's content), not parsed as JSON. */
    HttpResponse<byte[]> raw(String method, String path, byte[] body) throws IOException, InterruptedException {
        return raw(method, path, body, false);
    }

    /** As {@link #raw(String, String, byte[])}; with {@code expectContinue} the body waits for "100 Continue", as curl's does. */
    HttpResponse<byte[]> raw(String method, String path, byte[] body, boolean expectContinue)
            throws IOException, InterruptedException {
        String type = rawType(path);
        HttpResponse<byte[]> r = client().send(request(method, path, type, body, expectContinue),
                HttpResponse.BodyHandlers.ofByteArray());
        judge(method, path, type, body, r.statusCode(), r.headers(), r.body());
        return r;
    }

    /**
     * A request whose answer is read as it comes (server-sent events), with extra request headers
     * (name, value, ...): judged by its status and Content-Type, an error answer by its body too.
     */
    HttpResponse<java.io.InputStream> stream(String method, String path, Object body, String... headers)
            throws IOException, InterruptedException {
        byte[] bytes = body == null ? null : (body instanceof String text ? text : JSON.writeValueAsString(body))
                .getBytes(StandardCharsets.UTF_8);
        HttpRequest plain = request(method, path, "application/json", bytes, false);
        HttpRequest.Builder b = HttpRequest.newBuilder(plain, (name, value) -> true);
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        HttpResponse<java.io.InputStream> r = client().send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        byte[] answer = r.statusCode() >= 400 ? r.body().readAllBytes() : new byte[0];
        judge(method, path, bytes == null ? null : "application/json", bytes, r.statusCode(), r.headers(), answer);
        if (r.statusCode() >= 400) {
            throw new AssertionError(method + " " + path + " answered " + r.statusCode() + " " + new String(answer, StandardCharsets.UTF_8));
        }
        return r;
    }

    private HttpRequest request(String method, String path, String type, byte[] body, boolean expectContinue) {
        var b = HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(Duration.ofSeconds(120)).expectContinue(expectContinue)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (body != null) {
            b.header("Content-Type", type);
        }
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return b.build();
    }

    /** What a raw body is: a bundle jar on the plugin routes, bytes of a file everywhere else. */
    private static String rawType(String path) {
        return path.startsWith("/v1/plugins") ? "application/java-archive" : "application/octet-stream";
    }

    private void judge(String method, String path, String type, byte[] body, int status, HttpHeaders headers, byte[] answer) {
        if (!JUDGED) {
            return;
        }
        OpenApiContract contract = OpenApiContract.docs();
        String exchange = method + " " + path + " → " + status;
        if (judging == Judging.VENDOR_SURFACE) {
            if (contract.template(path.split("\\?")[0]) != null) {
                throw new AssertionError(exchange + " was sent as a vendor's, but docs/openapi.json documents the path");
            }
            return;
        }
        OpenApiContract.Verdict v = contract.judge(method, path, type, body, status,
                headers.firstValue("Content-Type").orElse(null), answer);
        boolean outside = judging == Judging.OUTSIDE_THE_CONTRACT;
        if (outside && v.request().isEmpty()) {
            throw new AssertionError(exchange + " was sent as outside the contract, but docs/openapi.json describes the"
                    + " request: send it through the contract" + (v.answer().isEmpty() ? "" : "; and " + v.answer()));
        }
        List<String> problems = outside ? v.answer() : v.problems();
        if (!problems.isEmpty()) {
            throw new AssertionError(exchange + ": what docs/openapi.json does not allow:\n  " + String.join("\n  ", problems));
        }
        if (succeeded != null && v.operation() != null && v.conforms() && status < 300) {
            succeeded.add(v.operation());
        }
    }

    /**
     * An exchange a test made with a client of its own (a browser's cookie jar and redirects, a
     * certificate to trust, the Java client), judged as this client judges its own: every answer of
     * a redirect chain, the last with its body. {@code requestBody} is what the last request sent
     * (null for nothing); the requests a redirect made send nothing. Returns {@code r}.
     */
    static <T> HttpResponse<T> judged(HttpResponse<T> r, byte[] requestBody) {
        return new Api(null, null).judgedExchange(r, requestBody);
    }

    /** {@link #judged}, for a request the document deliberately does not describe ({@link #outsideTheContract()}). */
    static <T> HttpResponse<T> judgedOutsideTheContract(HttpResponse<T> r, byte[] requestBody) {
        return new Api(null, null).outsideTheContract().judgedExchange(r, requestBody);
    }

    private <T> HttpResponse<T> judgedExchange(HttpResponse<T> r, byte[] requestBody) {
        List<HttpResponse<T>> chain = new ArrayList<>();
        for (HttpResponse<T> a = r; a != null; a = a.previousResponse().orElse(null)) {
            chain.add(0, a);
        }
        for (HttpResponse<T> a : chain) {
            HttpRequest req = a.request();
            URI uri = req.uri();
            String target = uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
            byte[] sent = a == r ? requestBody : null;
            byte[] answer = a.body() instanceof byte[] bytes ? bytes
                    : a.body() == null ? new byte[0] : String.valueOf(a.body()).getBytes(StandardCharsets.UTF_8);
            judge(req.method(), target, req.headers().firstValue("Content-Type").orElse(null), sent, a.statusCode(),
                    a.headers(), answer);
        }
        return r;
    }

    /** Creates a sandbox and returns its id. */
    String createSandbox() throws IOException, InterruptedException {
        return createSandbox(Map.of());
    }

    /** Creates a sandbox with the given create fields (e.g. {@code disk_limit_mib}) and returns its id. */
    String createSandbox(Map<String, Object> fields) throws IOException, InterruptedException {
        Response r = post("/v1/sandboxes", fields);
        if (r.status() != 201) {
            throw new AssertionError("create failed: " + r.status() + " " + r.body());
        }
        return r.body().get("id").asText();
    }

    /**
     * The workspace of procbox sandbox {@code id} as the host reaches it: through its init's root,
     * since procbox mounts it in the sandbox's own mount namespace only.
     */
    Path procboxWorkspace(String id) throws IOException, InterruptedException {
        long pid = expect(200, get("/v1/sandboxes/" + id)).get("pid").asLong();
        return Path.of("/proc", Long.toString(pid), "root", "work");
    }

    /** Waits (bounded by {@code patience}) until sandbox {@code id} shows {@code tier}; returns what it showed then. */
    JsonNode awaitTier(String id, String tier, Duration patience) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        JsonNode now = expect(200, get("/v1/sandboxes/" + id));
        while (!tier.equals(now.path("tier").asText())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("sandbox " + id + " not " + tier + " within " + patience.toSeconds() + " s: " + now);
            }
            Thread.sleep(100);
            now = expect(200, get("/v1/sandboxes/" + id));
        }
        return now;
    }

    JsonNode exec(String id, Object... args) throws IOException, InterruptedException {
        Response r = post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of(args)));
        if (r.status() != 200) {
            throw new AssertionError("exec failed: " + r.status() + " " + r.body());
        }
        return r.body();
    }

    /**
     * {@code POST /v1/sandboxes {"snapshot_tag": TAG, "n": N}}: the ids of the N children, each
     * reported running; anything but a 201 with N running children is an AssertionError.
     */
    List<String> fork(String tag, int n) throws IOException, InterruptedException {
        Response r = post("/v1/sandboxes", Map.of("snapshot_tag", tag, "n", n));
        if (r.status() != 201 || r.body().size() != n) {
            throw new AssertionError("fork of " + n + " from " + tag + " failed: " + r.status() + " " + r.raw().body());
        }
        List<String> ids = new ArrayList<>();
        for (JsonNode child : r.body()) {
            if (!"running".equals(child.path("status").asText())) {
                throw new AssertionError("a child of " + tag + " is not running: " + child);
            }
            ids.add(child.get("id").asText());
        }
        return ids;
    }

    /** {@code POST /v1/sandboxes/ID/eval}: the answer of a 200 ({@code result}, {@code stdout}, ...), else an AssertionError. */
    JsonNode eval(String id, String code) throws IOException, InterruptedException {
        Response r = post("/v1/sandboxes/" + id + "/eval", Map.of("code", code));
        if (r.status() != 200) {
            throw new AssertionError("eval failed: " + r.status() + " " + r.raw().body());
        }
        return r.body();
    }

    /** Sandboxes outlive the daemon, so every test class deletes what it created. */
    void deleteAllSandboxes() throws IOException, InterruptedException {
        Response list = get("/v1/sandboxes");
        if (list.status() != 200) {
            throw new IllegalStateException("cannot list the sandboxes to delete them: " + list.status() + " " + list.raw().body());
        }
        for (JsonNode sb : list.body()) {
            delete("/v1/sandboxes/" + sb.get("id").asText());
        }
    }

    /** The body of {@code r}, which must have answered {@code status}. */
    static JsonNode expect(int status, Response r) {
        if (r.status() != status) {
            throw new AssertionError("expected " + status + ", got " + r.status() + " " + r.raw().body());
        }
        return r.body();
    }

    /** Whether {@code backend}, an entry of {@code GET /v1/backends}, lists the capability {@code name}. */
    static boolean can(JsonNode backend, String name) {
        for (JsonNode c : backend.get("capabilities")) {
            if (c.asText().equals(name)) {
                return true;
            }
        }
        return false;
    }

    static String sh(Api api, String id, String script) throws IOException, InterruptedException {
        return api.exec(id, "sh", "-c", script).get("stdout").asText();
    }
}
