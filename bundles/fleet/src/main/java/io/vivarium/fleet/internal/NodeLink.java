package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Locale;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
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

    /** How long a forwarded call may take at most: an exec or a dry-run runs as long as it asked to. */
    static final Duration CALL_TIMEOUT = Duration.ofHours(1);

    private final NodeAddress address;
    private final PairingCode code;
    private final SSLSocketFactory tls;

    /** A node's answer: its status, its body, its Retry-After if any. */
    private record Answer(int status, byte[] body, String retryAfter) {
    }

    NodeLink(NodeAddress address, PairingCode code) {
        this.address = address;
        this.code = code;
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new PinnedTrust(code.certificateSha256())}, null);
            this.tls = context.getSocketFactory();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up TLS for node links", e);
        }
    }

    NodeAddress address() {
        return address;
    }

    /** The node's hello: who it is, what its host is, how loaded it is. Any failure is a {@link NodeFailure}. */
    NodeHello hello() throws NodeFailure {
        Answer r = send("GET", "/v1/node/hello", MASTER, null, null, HELLO_TIMEOUT);
        if (r.status() != 200) {
            throw new NodeFailure("the node at " + address + " answered its hello with " + r.status() + ": "
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
        Answer r = send(method, path, caller, body == null ? null : FleetJson.write(body), "application/json", CALL_TIMEOUT);
        failOnError(r);
        if (type == null || r.status() == 204) {
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
        Answer r = send(method, path, caller, body, "application/octet-stream", CALL_TIMEOUT);
        failOnError(r);
        return r.body();
    }

    static String query(String name, String value) {
        return name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    private static void failOnError(Answer r) {
        if (r.status() >= 400) {
            throw new ApiException(r.status(), FleetJson.error(r.body()), seconds(r.retryAfter()), null);
        }
    }

    private static Integer seconds(String header) {
        try {
            return header == null ? null : Integer.valueOf(header.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * One request on the JDK's HTTPS connection, which keeps the connection alive for the next call
     * to this node (its body is read to the end and closed). Blocking in the caller's thread: a
     * forwarded call costs one extra hop, not a hand-over between threads.
     */
    private Answer send(String method, String path, Caller caller, byte[] body, String contentType, Duration timeout)
            throws NodeFailure {
        try {
            HttpsURLConnection c = (HttpsURLConnection) URI.create("https://" + address + path).toURL().openConnection();
            c.setSSLSocketFactory(tls);
            c.setHostnameVerifier((host, session) -> true); // PinnedTrust checked the certificate itself
            c.setConnectTimeout((int) CONNECT_TIMEOUT.toMillis());
            c.setReadTimeout((int) timeout.toMillis());
            c.setUseCaches(false);
            c.setRequestMethod(method);
            c.setRequestProperty("Authorization", "Bearer " + code.secret());
            c.setRequestProperty("Vivarium-Tenant", caller.tenant());
            c.setRequestProperty("Vivarium-Role", caller.role().name().toLowerCase(Locale.ROOT));
            if (body != null) {
                c.setRequestProperty("Content-Type", contentType);
                c.setDoOutput(true);
                c.setFixedLengthStreamingMode(body.length);
                try (OutputStream out = c.getOutputStream()) {
                    out.write(body);
                }
            }
            int status = c.getResponseCode();
            byte[] answer;
            try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
                answer = in == null ? new byte[0] : in.readAllBytes();
            }
            if (status == 401) {
                throw new NodeFailure("the node at " + address + " refused the pairing secret (" + FleetJson.error(answer)
                        + "); its pairing code changed: add it again with the code in its pki/node/pairing-code", null);
            }
            return new Answer(status, answer, c.getHeaderField("Retry-After"));
        } catch (NodeFailure e) {
            throw e;
        } catch (IOException e) {
            throw new NodeFailure(why(e), e);
        }
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
