package io.vivarium.itests.e2e;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The least an HTTP/1.1 client can do over one kept-alive TCP connection, as a load generator
 * (wrk, ab) does: write the request, read the status line, the headers and exactly
 * {@code Content-Length} bytes, on the caller's thread. Benchmarks time a server's round trip with it
 * where a general client's own costs would be part of the figure: the JDK's {@code HttpClient}
 * hands every answer from its selector thread to the caller, a wake-up of another thread per call.
 * An answer without a Content-Length (chunked) or that says it closes the connection is refused.
 */
final class KeptAliveHttp implements AutoCloseable {
    record Answer(int status, String body) {}

    private final URI server;
    private final String token;
    private Socket socket;
    private OutputStream out;
    private InputStream in;

    /**
     * A client of the server of {@code baseUrl} (http only), sending {@code token} as the bearer. It
     * connects at its first request (a server closes a connection that sits idle).
     */
    KeptAliveHttp(String baseUrl, String token) {
        this.server = URI.create(baseUrl);
        if (!"http".equals(server.getScheme())) {
            throw new IllegalArgumentException("plain http only: " + baseUrl);
        }
        this.token = token;
    }

    /** POST of a JSON body to {@code path}. */
    Answer post(String path, String json) throws IOException {
        if (socket == null) {
            socket = new Socket(server.getHost(), server.getPort());
            socket.setTcpNoDelay(true);
            out = socket.getOutputStream();
            in = new BufferedInputStream(socket.getInputStream());
        }
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        String head = "POST " + path + " HTTP/1.1\r\nHost: " + server.getAuthority() + "\r\nAuthorization: Bearer " + token
                + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n";
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        String status = line();
        if (!status.startsWith("HTTP/1.1 ") || status.length() < 12) {
            throw new IOException("not an HTTP/1.1 status line: " + status);
        }
        int length = -1;
        for (String header = line(); !header.isEmpty(); header = line()) {
            String lower = header.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
                length = Integer.parseInt(lower.substring("content-length:".length()).strip());
            } else if (lower.startsWith("transfer-encoding:") || lower.equals("connection: close")) {
                throw new IOException("the answer does not keep the connection with a Content-Length: " + header);
            }
        }
        if (length < 0) {
            throw new IOException("the answer has no Content-Length");
        }
        return new Answer(Integer.parseInt(status.substring(9, 12)), new String(in.readNBytes(length), StandardCharsets.UTF_8));
    }

    private String line() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(64);
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new EOFException("the server closed the connection");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.US_ASCII);
    }

    @Override
    public void close() throws IOException {
        if (socket != null) {
            socket.close();
        }
    }
}
