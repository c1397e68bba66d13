package io.vivarium.itests.e2e;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** A tiny HTTP client for the daemon's JSON API. */
final class Api {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    record Response(int status, JsonNode body, HttpResponse<String> raw) {
        String error() {
            return body == null || body.get("error") == null ? null : body.get("error").asText();
        }
    }

    private final String baseUrl;
    private final String token;

    Api(String baseUrl, String token) {
        this.baseUrl = baseUrl;
        this.token = token;
    }

    Api as(String otherToken) {
        return new Api(baseUrl, otherToken);
    }

    Response get(String path) throws IOException, InterruptedException {
        return send("GET", path, null);
    }

    Response delete(String path) throws IOException, InterruptedException {
        return send("DELETE", path, null);
    }

    Response post(String path, Object body) throws IOException, InterruptedException {
        return send("POST", path, body instanceof String s ? s : JSON.writeValueAsString(body));
    }

    Response send(String method, String path, String body) throws IOException, InterruptedException {
        return sendBytes(method, path, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    /** A raw body, such as a bundle jar. */
    Response sendBytes(String method, String path, byte[] body) throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(Duration.ofSeconds(120))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
        JsonNode node = r.body().isEmpty() ? null : JSON.readTree(r.body());
        return new Response(r.statusCode(), node, r);
    }

    /** A request whose answer is kept as bytes (a file's content), not parsed as JSON. */
    HttpResponse<byte[]> raw(String method, String path, byte[] body) throws IOException, InterruptedException {
        return raw(method, path, body, false);
    }

    /** As {@link #raw(String, String, byte[])}; with {@code expectContinue} the body waits for "100 Continue", as curl's does. */
    HttpResponse<byte[]> raw(String method, String path, byte[] body, boolean expectContinue)
            throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(Duration.ofSeconds(120)).expectContinue(expectContinue)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
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
