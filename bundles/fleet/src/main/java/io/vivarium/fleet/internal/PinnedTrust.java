package io.vivarium.fleet.internal;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * Trusts exactly one certificate, named by the SHA-256 of its DER encoding (the first half of a
 * node's pairing code), and nothing else: no CA, no host name. Extending
 * {@link X509ExtendedTrustManager} keeps the JDK from adding its own host-name check, which a
 * self-signed node certificate reached by address would fail; the pin is the stronger check.
 */
final class PinnedTrust extends X509ExtendedTrustManager {
    /** The pin did not match: the message names both digests, for the 502 that says so. */
    static final class WrongCertificate extends CertificateException {
        private static final long serialVersionUID = 1L;

        WrongCertificate(String message) {
            super(message);
        }
    }

    private final String sha256;

    PinnedTrust(String sha256) {
        this.sha256 = sha256;
    }

    /**
     * An HTTPS connection to {@code url} that trusts only the certificate {@code sha256} names; the
     * host name is not checked, the pin is.
     */
    static HttpsURLConnection open(String url, String sha256) throws IOException {
        HttpsURLConnection c = (HttpsURLConnection) URI.create(url).toURL().openConnection();
        c.setSSLSocketFactory(pinned(sha256).factory());
        c.setHostnameVerifier((host, session) -> true);
        c.setUseCaches(false);
        return c;
    }

    /**
     * A pin's context and the one socket factory made of it: the JDK keeps a connection alive for
     * the next call only with the same factory ({@link SSLContext#getSocketFactory()} makes a new
     * one at every call: each call was a new TLS handshake), and the http bundle keeps one client
     * per context.
     */
    private record Pinned(SSLContext context, SSLSocketFactory factory) {
    }

    private static final Map<String, Pinned> PINNED = new ConcurrentHashMap<>();

    /** The TLS context that trusts only the certificate {@code sha256} names. */
    static SSLContext context(String sha256) {
        return pinned(sha256).context();
    }

    private static Pinned pinned(String sha256) {
        return PINNED.computeIfAbsent(sha256, PinnedTrust::make);
    }

    private static Pinned make(String sha256) {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new PinnedTrust(sha256)}, null);
            return new Pinned(context, context.getSocketFactory());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up TLS for node links", e);
        }
    }

    static String sha256(X509Certificate cert) throws CertificateEncodingException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(cert.getEncoded()));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        if (chain == null || chain.length == 0) {
            throw new WrongCertificate("the node presented no certificate");
        }
        String presented = sha256(chain[0]);
        if (!MessageDigest.isEqual(presented.getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                sha256.getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
            throw new WrongCertificate("the node presented a certificate with SHA-256 " + presented
                    + ", not the pairing code's " + sha256);
        }
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        checkServerTrusted(chain, authType);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        checkServerTrusted(chain, authType);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("a master's link to a node trusts no client");
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        checkClientTrusted(chain, authType);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        checkClientTrusted(chain, authType);
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0];
    }
}
