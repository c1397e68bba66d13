package io.vivarium.client;

import java.security.GeneralSecurityException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * The TLS context of a client of a plain {@code http} daemon, which never uses it: without one the
 * JDK's client makes the default context as it is built, which reads and parses every CA
 * certificate the JDK trusts, a fifth of a command line's run (async-profiler). It trusts nothing,
 * should anything ever ask it.
 */
final class NoTls {
    static final SSLContext CONTEXT = make();

    private NoTls() {
    }

    private static SSLContext make() {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new X509TrustManager() {
                @Override
                public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
                    throw new CertificateException("a client of a plain http daemon trusts no certificate");
                }

                @Override
                public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
                    throw new CertificateException("a client of a plain http daemon trusts no certificate");
                }

                @Override
                public X509Certificate[] getAcceptedIssuers() {
                    return new X509Certificate[0];
                }
            }}, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JDK has TLS", e);
        }
    }
}
