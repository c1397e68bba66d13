package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Locale;
import java.util.Map;

import io.vivarium.api.Caller;
import io.vivarium.api.Role;

/**
 * Makes the calls a master queued for a node in pull mode: each is a request of the node's own API,
 * made here on the node's own HTTPS listener exactly as a listening node would receive it from the
 * master (bearer: the pairing secret; {@code Vivarium-Tenant}, {@code Vivarium-Role}), so both
 * modes go through the same routes. The node's certificate is pinned by its SHA-256, as the
 * master pins it, with no host-name check (the listener may be reached by a loopback address).
 */
final class SelfCalls {
    private final String selfUrl;
    private final Path secretFile;
    private final DialTransport self;

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
        this.self = new DialTransport(selfUrl, "the node's own API at " + selfUrl, pin, this::secret);
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
        Caller as = new Caller(call.tenant() == null ? "default" : call.tenant(),
                call.role() == null ? Role.OPERATOR : Role.valueOf(call.role().toUpperCase(Locale.ROOT)));
        NodeLink.Answer answer = self.send(call.method(), call.path(), as, body, call.contentType(), NodeLink.CALL_TIMEOUT);
        return new PullWire.Result(call.id(), answer.status(), answer.retryAfter(), base64(answer.body()));
    }

    private String secret() throws IOException {
        return Files.readString(secretFile, StandardCharsets.US_ASCII).strip();
    }

    private static String base64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }
}
