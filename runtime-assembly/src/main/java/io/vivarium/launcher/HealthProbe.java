package io.vivarium.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.List;

import javax.net.ssl.SSLSocketFactory;

/**
 * One {@code GET /healthz} of the daemon the launcher started, over HTTP or HTTPS: whether it
 * answers 200. Over HTTPS it trusts the served certificate alone and asks for a host the
 * certificate names (see {@link TlsFiles#nameFor}), whatever address it connects to.
 */
final class HealthProbe {
    private static final int CONNECT_TIMEOUT_MILLIS = 1000;
    private static final int READ_TIMEOUT_MILLIS = 2000;

    private final String address;
    private final int port;
    private final String hostHeader;
    private final SSLSocketFactory tls;

    private HealthProbe(String address, int port, String hostHeader, SSLSocketFactory tls) {
        this.address = address;
        this.port = port;
        this.hostHeader = hostHeader;
        this.tls = tls;
    }

    /** The probe of a daemon that listens on {@code listenHost} (a wildcard is probed on loopback). */
    static HealthProbe http(String listenHost, int port) {
        String probe = Options.probeHost(listenHost);
        return new HealthProbe(probe, port, probe, null);
    }

    static HealthProbe https(String listenHost, int port, TlsFiles served) throws GeneralSecurityException {
        String probe = Options.probeHost(listenHost);
        return new HealthProbe(probe, port, served.nameFor(probe), TlsFiles.trusting(List.of(served.leaf())).getSocketFactory());
    }

    /** What is probed, for messages. */
    String url() {
        return (tls == null ? "http://" : "https://") + address + ":" + port + "/healthz";
    }

    boolean answers200() {
        String bare = address.startsWith("[") ? address.substring(1, address.length() - 1) : address;
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress(bare, port), CONNECT_TIMEOUT_MILLIS);
            plain.setSoTimeout(READ_TIMEOUT_MILLIS);
            String name = hostHeader.startsWith("[") ? hostHeader.substring(1, hostHeader.length() - 1) : hostHeader;
            try (Socket s = tls == null ? plain : tls.createSocket(plain, name, port, true)) {
                OutputStream out = s.getOutputStream();
                out.write(("GET /healthz HTTP/1.1\r\nHost: " + hostHeader + ":" + port + "\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                return statusLine(s.getInputStream()).matches("HTTP/1\\.[01] 200( .*)?");
            }
        } catch (IOException e) {
            return false; // not listening (or not handshaking) yet
        }
    }

    private static String statusLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n' && line.length() < 200) {
            line.append((char) c);
        }
        return line.toString().strip();
    }
}
