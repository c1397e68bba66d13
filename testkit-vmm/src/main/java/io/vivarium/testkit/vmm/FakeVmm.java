package io.vivarium.testkit.vmm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * One VMM process as its HTTP API answers, on a Unix socket: every request is first checked
 * against the pinned {@link ApiDocument} (refused, in the VMM's way, with the violations), then
 * handed to the VMM's {@link Rules}: what its document says only in prose, which the VMM enforces.
 * What passed the document is {@link #received}, in order.
 */
public final class FakeVmm implements AutoCloseable {
    /** One request as it arrived: its body null when it had none. */
    public record Received(String method, String path, JsonNode body) {
    }

    /** An answer: a status and a JSON body, plain text (a text node), or none (null). */
    public record Answer(int status, JsonNode body) {
        public static Answer text(int status, String text) {
            return new Answer(status, com.fasterxml.jackson.databind.node.TextNode.valueOf(text));
        }

        public static Answer done() {
            return new Answer(204, null);
        }

        public static Answer ok(JsonNode body) {
            return new Answer(200, body);
        }
    }

    /** What one VMM does with a request its document allows, and how it says no. */
    public interface Rules {
        Answer answer(Received request) throws IOException;

        /** A refusal in the VMM's own shape. */
        Answer refusal(String message);
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Server server = new Server();
    private final ApiDocument document;
    private final Rules rules;
    private final List<Received> received = new ArrayList<>();

    /** Serves on {@code socket} until {@link #close}. */
    public FakeVmm(Path socket, ApiDocument document, Rules rules) throws Exception {
        this.document = document;
        this.rules = rules;
        UnixDomainServerConnector connector = new UnixDomainServerConnector(server);
        connector.setUnixDomainPath(socket);
        server.addConnector(connector);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                String body = Content.Source.asString(request, StandardCharsets.UTF_8);
                Answer answer = answer(request.getMethod(), Request.getPathInContext(request), body);
                response.setStatus(answer.status());
                if (answer.body() != null && answer.body().isTextual()) {
                    response.getHeaders().put("Content-Type", "text/plain");
                    Content.Sink.write(response, true, answer.body().asText(), callback);
                } else if (answer.body() != null) {
                    response.getHeaders().put("Content-Type", "application/json");
                    Content.Sink.write(response, true, JSON.writeValueAsString(answer.body()), callback);
                } else {
                    callback.succeeded();
                }
                return true;
            }
        });
        server.start();
    }

    private synchronized Answer answer(String method, String path, String body) throws IOException {
        String violations = document.violations(method, path, body);
        if (!violations.isEmpty()) {
            return rules.refusal("the request does not follow API " + document.version() + ": " + violations);
        }
        Received request = new Received(method, path, body.isEmpty() ? null : JSON.readTree(body));
        received.add(request);
        return rules.answer(request);
    }

    /** What passed the document, in order. */
    public synchronized List<Received> received() {
        return List.copyOf(received);
    }

    /** {@link #received} in the shape of a golden fixture: {@code [{"method", "path", "body"}]}. */
    public synchronized List<JsonNode> receivedAsFixture() {
        return received.stream().map(r -> (JsonNode) JSON.createObjectNode().put("method", r.method())
                .put("path", r.path()).set("body", r.body())).toList();
    }

    /**
     * Golden fixture {@code resource} of {@code owner}: a JSON array of requests as
     * {@link #receivedAsFixture} gives them, with {@code ${dir}} standing for {@code dir}.
     */
    public static List<JsonNode> fixture(Class<?> owner, String resource, Path dir) throws IOException {
        try (var in = owner.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no fixture " + resource + " on the test class path");
            }
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${dir}", dir.toString());
            List<JsonNode> requests = new ArrayList<>();
            JSON.readTree(text).forEach(requests::add);
            return requests;
        }
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }
}
