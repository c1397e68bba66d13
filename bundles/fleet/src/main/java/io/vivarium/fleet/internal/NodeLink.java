package io.vivarium.fleet.internal;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;

/**
 * The master's HTTPS link to one node: the node's certificate pinned by its pairing code, the
 * pairing secret presented on every call, with the tenant and role the master acts for (the
 * master has already checked both). Calls go to the node's own {@code /v1} API.
 */
final class NodeLink {
    /** Why a node could not be driven: unreachable, another certificate, or a refused secret. */
    static final class NodeFailure extends IOException {
        private static final long serialVersionUID = 1L;

        NodeFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Whom the master acts as for its own calls (hello, a node's census): daemon-wide, no tenant's. */
    static final Caller MASTER = new Caller("default", io.vivarium.api.Role.OPERATOR);
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);
    static final Duration HELLO_TIMEOUT = Duration.ofSeconds(3);

    private final NodeAddress address;
    private final PairingCode code;
    private final HttpClient http;

    NodeLink(NodeAddress address, PairingCode code) {
        this.address = address;
        this.code = code;
        try {
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, new TrustManager[] {new PinnedTrust(code.certificateSha256())}, null);
            this.http = HttpClient.newBuilder().sslContext(tls).version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(CONNECT_TIMEOUT).build();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up TLS for node links", e);
        }
    }

    NodeAddress address() {
        return address;
    }

    /** The node's hello: who it is, what its host is, how loaded it is. Any failure is a {@link NodeFailure}. */
    NodeHello hello() throws NodeFailure {
        HttpResponse<byte[]> r = send("GET", "/v1/node/hello", MASTER, null, null, HELLO_TIMEOUT);
        if (r.statusCode() != 200) {
            throw new NodeFailure("the node at " + address + " answered its hello with " + r.statusCode() + ": "
                    + FleetJson.error(r.body()), null);
        }
        try {
            return FleetJson.read(r.body(), NodeHello.class);
        } catch (IOException e) {
            throw new NodeFailure("the node at " + address + " answered its hello with what is not a hello: " + e.getMessage(), e);
        }
    }

    /**
     * Calls a route of the node's API for {@code caller}; a JSON answer is read as {@code type}
     * ({@code null} for none). The node's own 4xx and 5xx reach the caller as they are.
     */
    <T> T call(String method, String path, Caller caller, Object body, Class<T> type) throws NodeFailure {
        HttpResponse<byte[]> r = send(method, path, caller, body == null ? null : FleetJson.write(body), "application/json", null);
        failOnError(r);
        if (type == null || r.statusCode() == 204) {
            return null;
        }
        try {
            return FleetJson.read(r.body(), type);
        } catch (IOException e) {
            throw new NodeFailure("node " + address + " answered " + method + " " + path + " with what the master cannot read: "
                    + e.getMessage(), e);
        }
    }

    /** Like {@link #call} for a body of bytes either way (files). */
    byte[] bytes(String method, String path, Caller caller, byte[] body) throws NodeFailure {
        HttpResponse<byte[]> r = send(method, path, caller, body, "application/octet-stream", null);
        failOnError(r);
        return r.body();
    }

    static String query(String name, String value) {
        return name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    private static void failOnError(HttpResponse<byte[]> r) {
        if (r.statusCode() >= 400) {
            Integer retry = r.headers().firstValue("Retry-After").map(NodeLink::seconds).orElse(null);
            throw new ApiException(r.statusCode(), FleetJson.error(r.body()), retry, null);
        }
    }

    private static Integer seconds(String header) {
        try {
            return Integer.valueOf(header.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private HttpResponse<byte[]> send(String method, String path, Caller caller, byte[] body, String contentType,
            Duration timeout) throws NodeFailure {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://" + address + path))
                .header("Authorization", "Bearer " + code.secret())
                .header("Vivarium-Tenant", caller.tenant())
                .header("Vivarium-Role", caller.role().name().toLowerCase(Locale.ROOT))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (body != null) {
            b.header("Content-Type", contentType);
        }
        Optional.ofNullable(timeout).ifPresent(b::timeout);
        HttpResponse<byte[]> r;
        try {
            r = http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NodeFailure("interrupted while calling node " + address, e);
        } catch (IOException e) {
            throw new NodeFailure(why(e), e);
        }
        if (r.statusCode() == 401) {
            throw new NodeFailure("the node at " + address + " refused the pairing secret (" + FleetJson.error(r.body())
                    + "); its pairing code changed: add it again with the code in its pki/node/pairing-code", null);
        }
        return r;
    }

    private String why(IOException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof PinnedTrust.WrongCertificate wrong) {
                return "the node at " + address + " is not the node of this pairing code: " + wrong.getMessage();
            }
        }
        return "the node at " + address + " cannot be reached: " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    }
}
