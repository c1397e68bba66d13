package io.vivarium.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.net.ssl.SSLContext;

import io.vivarium.api.BackendInfo;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * A client of one Vivarium daemon's {@code /v1} API (docs/openapi.json): every operation a program
 * drives, typed with the API's own records, errors as {@link VivariumException} carrying the status
 * and the daemon's message. Thread-safe; one keeps one pool of kept-alive connections, closed with it.
 *
 * <pre>{@code
 * VivariumClient vivarium = VivariumClient.connect(URI.create("http://127.0.0.1:8889"), token);
 * SandboxInfo sb = vivarium.sandboxes().create(null);
 * ExecResult r = vivarium.sandboxes().exec(sb.id(), List.of("sh", "-c", "echo hi"));
 * }</pre>
 */
public final class VivariumClient implements AutoCloseable {
    private final HttpClient connections;
    private final Http http;

    private VivariumClient(HttpClient connections, Http http) {
        this.connections = connections;
        this.http = http;
    }

    /** Closes its connections (calls under way end); a client is not used after. */
    @Override
    public void close() {
        connections.close();
    }

    /** A client of the daemon at {@code baseUrl} (e.g. {@code http://127.0.0.1:8889}) with a bearer token. */
    public static VivariumClient connect(URI baseUrl, String token) {
        return builder(baseUrl).token(token).build();
    }

    public static Builder builder(URI baseUrl) {
        return new Builder(baseUrl);
    }

    /** How a client connects. */
    public static final class Builder {
        private final URI baseUrl;
        private String token;
        private SSLContext ssl;
        private HttpClient connections;
        private Duration timeout = Duration.ofMinutes(2);

        private Builder(URI baseUrl) {
            this.baseUrl = baseUrl;
        }

        public Builder token(String bearerToken) {
            this.token = bearerToken;
            return this;
        }

        /** The TLS context of an {@code https} daemon (e.g. one that trusts its own certificate). */
        public Builder sslContext(SSLContext context) {
            this.ssl = context;
            return this;
        }

        /**
         * The JDK client to call through, configured as the caller needs (a proxy, an executor, TLS,
         * something that watches every exchange); HTTP/1.1 is what the daemon speaks. This client
         * closes it when it is closed. Without one, the client makes its own.
         */
        public Builder httpClient(HttpClient client) {
            this.connections = client;
            return this;
        }

        /** How long a call may take before it fails (status 0); calls that wait say how long on top. Default 2 minutes. */
        public Builder timeout(Duration callTimeout) {
            this.timeout = callTimeout;
            return this;
        }

        /** @throws IllegalStateException if both an {@link #httpClient} and an {@link #sslContext} were given */
        public VivariumClient build() {
            if (connections != null && ssl != null) {
                throw new IllegalStateException("give the SSL context to the HttpClient passed to httpClient(), not to this builder");
            }
            HttpClient client = connections;
            if (client == null) {
                HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10));
                if (ssl != null) {
                    b.sslContext(ssl);
                } else if ("http".equalsIgnoreCase(baseUrl.getScheme())) {
                    b.sslContext(NoTls.CONTEXT);
                }
                client = b.build();
            }
            return new VivariumClient(client, new Http(client, baseUrl, token, timeout));
        }
    }

    public Sandboxes sandboxes() {
        return new Sandboxes(http);
    }

    public Ports ports() {
        return new Ports(http);
    }

    public Volumes volumes() {
        return new Volumes(http);
    }

    public Templates templates() {
        return new Templates(http);
    }

    public Commands commands() {
        return new Commands(http);
    }

    public Snapshots snapshots() {
        return new Snapshots(http);
    }

    public Vms vms() {
        return new Vms(http);
    }

    public Administration administration() {
        return new Administration(http);
    }

    public Fleet fleet() {
        return new Fleet(http);
    }

    /** Whether the daemon answers ({@code {"ok": true}}); needs no token. */
    @Route("GET /healthz")
    public boolean healthy() {
        return http.json("GET", "/healthz", null, JsonNode.class).path("ok").asBoolean();
    }

    /** The daemon's version and the API versions it serves ({@code version}, {@code api}, {@code apis}). */
    @Route("GET /version")
    public Map<String, Object> version() {
        return http.json("GET", "/version", null, new TypeReference<Map<String, Object>>() { });
    }

    @Route("GET /v1/backends")
    public List<BackendInfo> backends() {
        return http.json("GET", "/v1/backends", null, new TypeReference<List<BackendInfo>>() { });
    }

    /** The API's contract, docs/openapi.json as this daemon serves it. */
    @Route("GET /v1/openapi.json")
    public JsonNode openApi() {
        return http.json("GET", "/v1/openapi.json", null, JsonNode.class);
    }
}
