package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;

/**
 * Makes the calls a master queued for a node in pull mode: each is a request of the node's own API,
 * made here on the node's own HTTPS listener exactly as a listening node would receive it from the
 * master (bearer: the pairing secret; {@code Vivarium-Tenant}, {@code Vivarium-Role}), so both
 * modes go through the same routes. The node's certificate is pinned by its SHA-256, as the
 * master pins it, with no host-name check (the listener may be reached by a loopback address).
 */
final class SelfCalls {
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);

    private final String selfUrl;
    private final Path secretFile;
    private final SSLSocketFactory tls;

    /**
     * @param selfUrl the node's own listener, {@code https://HOST:PORT}
     * @param secretFile the pairing secret, read at each call (it changes when deleted and the node restarts)
     * @param certFile the node's own certificate, pinned
     * @throws IOException when the certificate cannot be read
     */
    SelfCalls(String selfUrl, Path secretFile, Path certFile) throws IOException {
        this.selfUrl = selfUrl;
        this.secretFile = secretFile;
        String pin;
        try (InputStream in = Files.newInputStream(certFile)) {
            pin = PinnedTrust.sha256((X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in));
        } catch (GeneralSecurityException | ClassCastException e) {
            throw new IOException("cannot read the node's certificate " + certFile + ": " + e.getMessage(), e);
        }
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new PinnedTrust(pin)}, null);
            this.tls = context.getSocketFactory();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up TLS for the node's calls to itself", e);
        }
    }

    /**
     * Makes {@code call} and answers what the node's API answered. Failing to reach the API at all is
     * a 502 whose body says why, so the master's caller gets an answer rather than a timeout.
     */
    PullWire.Result call(PullWire.Call call) {
        try {
            return send(call);
        } catch (IOException | RuntimeException e) {
            String why = "the node could not make " + call.method() + " " + call.path() + " on its own API at " + selfUrl + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
            return new PullWire.Result(call.id(), 502, null, base64(FleetJson.write(Map.of("error", why))));
        }
    }

    private PullWire.Result send(PullWire.Call call) throws IOException {
        if (call.path() == null || !call.path().startsWith("/")) {
            throw new IOException("the call's path '" + call.path() + "' is not an absolute path");
        }
        byte[] body = call.body() == null ? null : Base64.getDecoder().decode(call.body());
        HttpsURLConnection c = (HttpsURLConnection) URI.create(selfUrl + call.path()).toURL().openConnection();
        c.setSSLSocketFactory(tls);
        c.setHostnameVerifier((host, session) -> true); // PinnedTrust checked the certificate itself
        c.setConnectTimeout((int) CONNECT_TIMEOUT.toMillis());
        c.setReadTimeout((int) NodeLink.CALL_TIMEOUT.toMillis());
        c.setUseCaches(false);
        c.setRequestMethod(call.method());
        c.setRequestProperty("Authorization", "Bearer " + secret());
        if (call.tenant() != null) {
            c.setRequestProperty("Vivarium-Tenant", call.tenant());
        }
        if (call.role() != null) {
            c.setRequestProperty("Vivarium-Role", call.role());
        }
        if (body != null) {
            if (call.contentType() != null) {
                c.setRequestProperty("Content-Type", call.contentType());
            }
            c.setDoOutput(true);
            c.setFixedLengthStreamingMode(body.length);
            try (OutputStream out = c.getOutputStream()) {
                out.write(body);
            }
        }
        int status = c.getResponseCode();
        byte[] answer;
        try (InputStream in = status >= HttpURLConnection.HTTP_BAD_REQUEST ? c.getErrorStream() : c.getInputStream()) {
            answer = in == null ? new byte[0] : in.readAllBytes();
        }
        return new PullWire.Result(call.id(), status, c.getHeaderField("Retry-After"), base64(answer));
    }

    private String secret() throws IOException {
        return Files.readString(secretFile, StandardCharsets.US_ASCII).strip();
    }

    private static String base64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }
}
