package io.vivarium.testkit.vmm;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * Stoplight Prism ({@code prism mock --errors}, npm {@code @stoplight/prism-cli}) serving a VMM's
 * pinned document, bridged to a Unix socket as the VMM's API is: each request on the socket goes to
 * Prism with the document's server path taken off (Prism serves the paths bare), and Prism's answer
 * comes back. Prism answers a request its document allows with a 2xx and one it does not with the
 * document's error response; what it does not check is a field the document does not define (a
 * renamed one), which {@link ApiDocument} does. A second, independent judge of the same requests.
 */
public final class PrismMock implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Process prism;
    private final Server bridge = new Server();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final int port;
    private final String serverPath;
    private final Path log;

    /** The {@code prism} executable on the PATH, if there is one. */
    public static Optional<Path> executable() {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .filter(d -> !d.isEmpty())
                .map(d -> Path.of(d, "prism"))
                .filter(Files::isExecutable)
                .findFirst();
    }

    /**
     * Starts Prism on {@code document} (written to {@code dir}) and serves it on Unix socket {@code
     * socket}; {@code serverPath} (e.g. {@code /api/v1}, or empty) is taken off each request's path.
     */
    public PrismMock(ApiDocument document, Path dir, Path socket, String serverPath) throws Exception {
        Path executable = executable().orElseThrow(() -> new IllegalStateException("no prism on the PATH"));
        Path spec = Files.writeString(dir.resolve("document.yaml"), document.text());
        this.port = freePort();
        this.serverPath = serverPath;
        this.log = dir.resolve("prism.log");
        this.prism = new ProcessBuilder(executable.toString(), "mock", "--errors", "-h", "127.0.0.1", "-p",
                Integer.toString(port), spec.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            awaitListening();
            UnixDomainServerConnector connector = new UnixDomainServerConnector(bridge);
            connector.setUnixDomainPath(socket);
            bridge.addConnector(connector);
            bridge.setHandler(new Handler.Abstract() {
                @Override
                public boolean handle(Request request, Response response, Callback callback) throws Exception {
                    forward(request, response, callback);
                    return true;
                }
            });
            bridge.start();
        } catch (Exception e) {
            close();
            throw e;
        }
    }

    private void forward(Request request, Response response, Callback callback) throws Exception {
        String path = Request.getPathInContext(request);
        if (!path.startsWith(serverPath)) {
            response.setStatus(404);
            Content.Sink.write(response, true, "not under the document's server path " + serverPath, callback);
            return;
        }
        String body = Content.Source.asString(request, StandardCharsets.UTF_8);
        HttpRequest.Builder out = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + path.substring(serverPath.length()))).timeout(Duration.ofSeconds(10))
                .method(request.getMethod(), body.isEmpty() ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (!body.isEmpty()) {
            out.header("Content-Type", "application/json");
        }
        HttpResponse<String> answer = http.send(out.build(), HttpResponse.BodyHandlers.ofString());
        response.setStatus(answer.statusCode());
        answer.headers().firstValue("Content-Type").ifPresent(t -> response.getHeaders().put("Content-Type", t));
        Content.Sink.write(response, true, answer.body(), callback);
    }

    private void awaitListening() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!prism.isAlive()) {
                throw new IOException("prism exited (" + prism.exitValue() + "): " + Files.readString(log));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                TimeUnit.MILLISECONDS.sleep(100);
            }
        }
        throw new IOException("prism did not listen within " + START_TIMEOUT.toSeconds() + " s: " + Files.readString(log));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() throws Exception {
        try {
            bridge.stop();
        } finally {
            List<ProcessHandle> all = Stream.concat(prism.descendants(), Stream.of(prism.toHandle())).toList();
            all.forEach(ProcessHandle::destroy);
            for (ProcessHandle p : all) {
                p.onExit().get(10, TimeUnit.SECONDS);
            }
        }
    }
}
