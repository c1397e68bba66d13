package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Locale;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;

import io.vivarium.api.Caller;

/**
 * Listen mode: the master dials the node over HTTPS, the node's certificate pinned by its pairing
 * code, the pairing secret presented on every call with the tenant and role the master acts for.
 */
final class DialTransport implements NodeLink.Transport {
    private final NodeAddress address;
    private final PairingCode code;
    private final SSLSocketFactory tls;

    DialTransport(NodeAddress address, PairingCode code) {
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

    /**
     * One request on the JDK's HTTPS connection, which keeps the connection alive for the next call
     * to this node (its body is read to the end and closed). Blocking in the caller's thread: a
     * forwarded call costs one extra hop, not a hand-over between threads.
     */
    @Override
    public NodeLink.Answer send(String method, String path, Caller caller, byte[] body, String contentType, Duration timeout)
            throws NodeLink.NodeFailure {
        try {
            HttpsURLConnection c = (HttpsURLConnection) URI.create("https://" + address + path).toURL().openConnection();
            c.setSSLSocketFactory(tls);
            c.setHostnameVerifier((host, session) -> true); // PinnedTrust checked the certificate itself
            c.setConnectTimeout((int) NodeLink.CONNECT_TIMEOUT.toMillis());
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
                throw new NodeLink.NodeFailure("the node at " + address + " refused the pairing secret (" + FleetJson.error(answer)
                        + "); its pairing code changed: add it again with the code in its pki/node/pairing-code", null);
            }
            return new NodeLink.Answer(status, answer, c.getHeaderField("Retry-After"));
        } catch (NodeLink.NodeFailure e) {
            throw e;
        } catch (IOException e) {
            throw new NodeLink.NodeFailure(why(e), e);
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
