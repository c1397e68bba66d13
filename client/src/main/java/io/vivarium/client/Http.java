package io.vivarium.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import io.vivarium.api.Progress;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/** One daemon over HTTP: JSON both ways (snake_case, unknown fields ignored so a newer daemon still answers), errors as {@link VivariumException}. */
final class Http {
    static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();
    private static final String OCTET_STREAM = "application/octet-stream";

    private final HttpClient client;
    private final String base;
    private final String token;
    private final Duration timeout;

    Http(HttpClient client, URI base, String token, Duration timeout) {
        this.client = client;
        this.base = base.toString().replaceAll("/+$", "");
        this.token = token;
        this.timeout = timeout;
    }

    /**
     * Opens a WebSocket on {@code path} (with its query), authenticated as every call is; a refused
     * handshake is thrown with its status (the server's message is not readable through the JDK's client).
     */
    java.net.http.WebSocket webSocket(String path, java.net.http.WebSocket.Listener listener) {
        try {
            return client.newWebSocketBuilder().header("Authorization", "Bearer " + token).connectTimeout(timeout)
                    .buildAsync(URI.create(base.replaceFirst("^http", "ws") + path), listener).join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof java.net.http.WebSocketHandshakeException refused) {
                int status = refused.getResponse().statusCode();
                throw new VivariumException(status, "GET " + path + " was refused with " + status
                        + " (see the same route without Upgrade for the server's message)", null, refused);
            }
            throw new VivariumException(0, "GET " + path + " failed: " + e.getCause(), null, e.getCause());
        }
    }

    static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    <T> T json(String method, String path, Object body, Class<T> type) {
        return read(send(method, path, body, Duration.ZERO), type);
    }

    <T> T json(String method, String path, Object body, TypeReference<T> type) {
        byte[] answer = send(method, path, body, Duration.ZERO);
        try {
            return JSON.readValue(answer, type);
        } catch (IOException e) {
            throw new VivariumException(0, method + " " + path + " answered what is not the documented JSON: " + e.getMessage(), null, e);
        }
    }

    /** A JSON call whose answer may take {@code longer} than the client's timeout (a wait, a long poll). */
    <T> T json(String method, String path, Object body, Class<T> type, Duration longer) {
        return read(send(method, path, body, longer), type);
    }

    void noContent(String method, String path) {
        send(method, path, null, Duration.ZERO);
    }

    byte[] bytes(String method, String path, byte[] body) {
        return bytes(method, path, body, OCTET_STREAM);
    }

    byte[] bytes(String method, String path, byte[] body, String contentType) {
        return exchange(request(method, path, Duration.ZERO)
                .header("Content-Type", contentType)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body))
                .build(), method, path);
    }

    /** A call whose answer comes back as it is, whatever its status (a server behind an exposed port answers what it likes). */
    HttpResponse<byte[]> raw(String method, String path, byte[] body, Map<String, String> headers) {
        HttpRequest.Builder b = request(method, path, Duration.ZERO)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(b::header);
        return sent(b.build(), HttpResponse.BodyHandlers.ofByteArray(), method, path);
    }

    URI base() {
        return URI.create(base);
    }

    /**
     * A long call whose progress is read as it comes (docs/clients.md, "Progress"): each step is
     * told to {@code progress}; the last event's result is returned, or its error thrown.
     */
    <T> T progressed(String method, String path, Object body, Progress progress, TypeReference<T> type) {
        HttpResponse<InputStream> r = streamed(method, path, body, null);
        if (!r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
            // a daemon from before progress streams answers as to a plain call
            try (InputStream plain = r.body()) {
                return JSON.readValue(plain, type);
            } catch (IOException e) {
                throw unreachable(method, path, e);
            }
        }
        try (EventReader reader = new EventReader(r.body())) {
            for (EventReader.Frame f; (f = reader.nextFrame()) != null;) {
                JsonNode data = JSON.readTree(f.data());
                switch (f.name()) {
                    case "progress" -> progress.step(data.path("what").asText(), data.path("done").asInt(), data.path("of").asInt());
                    case "result" -> {
                        return JSON.convertValue(data, type);
                    }
                    case "error" -> throw new VivariumException(data.path("status").asInt(500), data.path("error").asText(), null,
                            null);
                    default -> {
                        // an event this client does not know: ignored
                    }
                }
            }
        } catch (IOException e) {
            throw unreachable(method, path, e);
        }
        throw new VivariumException(0, method + " " + path + ": the stream ended before its result", null, null);
    }

    /** A call whose answer is read as it comes (server-sent events); an error answer is thrown. */
    InputStream stream(String method, String path, Object body, String lastEventId) {
        return streamed(method, path, body, lastEventId).body();
    }

    /** {@link #stream}, with the answer's status and headers. */
    private HttpResponse<InputStream> streamed(String method, String path, Object body, String lastEventId) {
        HttpRequest.Builder b = request(method, path, null).method(method, publisher(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (lastEventId != null) {
            b.header("Last-Event-ID", lastEventId);
        }
        b.header("Accept", "text/event-stream");
        HttpResponse<InputStream> r = sent(b.build(), HttpResponse.BodyHandlers.ofInputStream(), method, path);
        if (r.statusCode() >= 400) {
            try (InputStream in = r.body()) {
                throw error(r.statusCode(), in.readAllBytes(), r.headers().firstValue("Retry-After").orElse(null));
            } catch (IOException e) {
                throw new VivariumException(r.statusCode(), method + " " + path + " answered " + r.statusCode(), null, e);
            }
        }
        return r;
    }

    private byte[] send(String method, String path, Object body, Duration longer) {
        HttpRequest.Builder b = request(method, path, longer).method(method, publisher(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        return exchange(b.build(), method, path);
    }

    private HttpRequest.Builder request(String method, String path, Duration longer) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
        if (longer != null) {
            b.timeout(timeout.plus(longer));
        }
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return b;
    }

    private static HttpRequest.BodyPublisher publisher(Object body) {
        if (body == null) {
            return HttpRequest.BodyPublishers.noBody();
        }
        try {
            return HttpRequest.BodyPublishers.ofByteArray(body instanceof byte[] raw ? raw : JSON.writeValueAsBytes(body));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write " + body + " as JSON: " + e.getMessage(), e);
        }
    }

    private byte[] exchange(HttpRequest request, String method, String path) {
        HttpResponse<byte[]> r = sent(request, HttpResponse.BodyHandlers.ofByteArray(), method, path);
        if (r.statusCode() >= 400) {
            throw error(r.statusCode(), r.body(), r.headers().firstValue("Retry-After").orElse(null));
        }
        return r.body();
    }

    /** The answer to {@code request}; a call that gets none is a {@link VivariumException} of status 0. */
    private <T> HttpResponse<T> sent(HttpRequest request, HttpResponse.BodyHandler<T> handler, String method, String path) {
        try {
            return client.send(request, handler);
        } catch (IOException e) {
            throw unreachable(method, path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VivariumException(0, "interrupted: " + method + " " + path, null, e);
        }
    }

    private VivariumException unreachable(String method, String path, IOException e) {
        return new VivariumException(0, "the daemon at " + base + " did not answer " + method + " " + path + ": "
                + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()), null, e);
    }

    private static VivariumException error(int status, byte[] body, String retryAfter) {
        String message;
        try {
            JsonNode node = JSON.readTree(body);
            message = node != null && node.hasNonNull("error") ? node.get("error").asText() : new String(body, StandardCharsets.UTF_8);
        } catch (IOException notJson) {
            message = new String(body, StandardCharsets.UTF_8);
        }
        Integer seconds = null;
        if (retryAfter != null) {
            try {
                seconds = Integer.valueOf(retryAfter.strip());
            } catch (NumberFormatException ignored) {
                // not in seconds: not reported
            }
        }
        return new VivariumException(status, message, seconds, null);
    }

    private static <T> T read(byte[] answer, Class<T> type) {
        if (type == Void.class) {
            return null;
        }
        try {
            return JSON.readValue(answer, type);
        } catch (IOException e) {
            throw new VivariumException(0, "the daemon answered what is not a " + type.getSimpleName() + ": " + e.getMessage(), null, e);
        }
    }
}
