package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * One Firecracker process as its API answers, on a Unix socket: every request is first checked
 * against {@link PinnedFirecrackerDocument} (400 with the violations as a {@code fault_message},
 * as Firecracker's own parser refuses a body), then against what the document says only in
 * prose, which Firecracker enforces: configuration is pre-boot only, a start needs a kernel, a
 * snapshot is of a paused microVM and a diff one needs dirty page tracking, a load goes only into
 * a process nothing was configured in and needs the files a create wrote, and the vsock's socket
 * is bound by the process, so one left by a process before is in the way. What it accepted is
 * {@link #received}.
 */
final class FakeFirecracker implements AutoCloseable {
    /** One request as it arrived. */
    record Received(String method, String path, JsonNode body) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Server server = new Server();
    private final List<Received> received = new ArrayList<>();
    private final Set<String> configured = new HashSet<>();
    private String state = "Not started";
    private JsonNode machine;
    private String vsockSocket;

    FakeFirecracker(Path socket) throws Exception {
        UnixDomainServerConnector connector = new UnixDomainServerConnector(server);
        connector.setUnixDomainPath(socket);
        server.addConnector(connector);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                String body = Content.Source.asString(request, StandardCharsets.UTF_8);
                Answer answer = answer(request.getMethod(), Request.getPathInContext(request), body);
                response.setStatus(answer.status());
                if (answer.body() != null) {
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

    private record Answer(int status, JsonNode body) {
        static Answer done() {
            return new Answer(204, null);
        }

        static Answer fault(String message) {
            return new Answer(400, JSON.createObjectNode().put("fault_message", message));
        }
    }

    private synchronized Answer answer(String method, String path, String text) throws IOException {
        String violations = PinnedFirecrackerDocument.violations(method, path, text);
        if (!violations.isEmpty()) {
            return Answer.fault("the request does not follow API " + FirecrackerApi.TARGET + ": " + violations);
        }
        JsonNode body = text.isEmpty() ? null : JSON.readTree(text);
        received.add(new Received(method, path, body));
        String operation = method + " " + (path.startsWith("/drives/") ? "/drives/" : path);
        switch (operation) {
            case "GET /":
                return new Answer(200, JSON.createObjectNode().put("app_name", "Firecracker").put("id", "fake")
                        .put("state", state).put("vmm_version", FirecrackerApi.TARGET));
            case "GET /version":
                return new Answer(200, JSON.createObjectNode().put("firecracker_version", FirecrackerApi.TARGET));
            case "PUT /machine-config", "PUT /boot-source", "PUT /drives/", "PUT /vsock":
                if (!state.equals("Not started")) {
                    return Answer.fault("The requested operation is not supported after starting the microVM.");
                }
                configured.add(operation);
                if (operation.equals("PUT /machine-config")) {
                    machine = body;
                } else if (operation.equals("PUT /vsock")) {
                    vsockSocket = body.get("uds_path").asText();
                }
                return Answer.done();
            case "PUT /actions":
                return action(body.get("action_type").asText());
            case "PATCH /vm":
                if (state.equals("Not started")) {
                    return Answer.fault("The microVM is not started yet.");
                }
                state = body.get("state").asText().equals("Paused") ? "Paused" : "Running";
                return Answer.done();
            case "PUT /snapshot/create":
                return create(body);
            case "PUT /snapshot/load":
                return load(body);
            default:
                return Answer.fault("Invalid request method and/or path: " + method + " " + path + ".");
        }
    }

    private Answer action(String type) throws IOException {
        if (!type.equals("InstanceStart")) {
            return state.equals("Not started") ? Answer.fault("The microVM is not started yet.") : Answer.done();
        }
        if (!state.equals("Not started")) {
            return Answer.fault("The requested operation is not supported after starting the microVM.");
        }
        if (!configured.contains("PUT /boot-source")) {
            return Answer.fault("Cannot start microvm without kernel configuration.");
        }
        Answer bound = bindVsock();
        if (bound != null) {
            return bound;
        }
        state = "Running";
        return Answer.done();
    }

    private Answer create(JsonNode body) throws IOException {
        if (!state.equals("Paused")) {
            return Answer.fault("Cannot save the microVM state: the microVM is not paused.");
        }
        boolean diff = body.path("snapshot_type").asText("Full").equals("Diff");
        if (diff && (machine == null || !machine.path("track_dirty_pages").asBoolean())) {
            return Answer.fault("Diff snapshots are not allowed on uVMs with dirty page tracking disabled.");
        }
        ObjectNode saved = JSON.createObjectNode().put("vsock", vsockSocket).put("diff", diff);
        Files.writeString(Path.of(body.get("snapshot_path").asText()), JSON.writeValueAsString(saved));
        Files.writeString(Path.of(body.get("mem_file_path").asText()), "guest memory");
        return Answer.done();
    }

    private Answer load(JsonNode body) throws IOException {
        if (!state.equals("Not started") || !configured.isEmpty()) {
            return Answer.fault("Loading a microVM snapshot not allowed after configuring boot-specific resources.");
        }
        Path snapshot = Path.of(body.get("snapshot_path").asText());
        Path memory = Path.of(body.path("mem_backend").path("backend_path").asText(body.path("mem_file_path").asText()));
        if (!Files.isRegularFile(snapshot) || !Files.isRegularFile(memory)) {
            return Answer.fault("Cannot open the snapshot file or the memory file: No such file or directory (os error 2)");
        }
        vsockSocket = body.has("vsock_override") ? body.get("vsock_override").get("uds_path").asText()
                : JSON.readTree(Files.readString(snapshot)).path("vsock").asText(null);
        Answer bound = bindVsock();
        if (bound != null) {
            return bound;
        }
        state = body.path("resume_vm").asBoolean() ? "Running" : "Paused";
        return Answer.done();
    }

    /** Binds the vsock's socket as Firecracker does when its device comes up: a file already there is in the way. */
    private Answer bindVsock() throws IOException {
        if (vsockSocket == null) {
            return null;
        }
        Path path = Path.of(vsockSocket);
        if (Files.exists(path)) {
            return Answer.fault("Cannot create the vsock device: Error binding the host-side Unix socket: "
                    + "Address in use (os error 98)");
        }
        Files.createFile(path);
        return null;
    }

    synchronized List<Received> received() {
        return List.copyOf(received);
    }

    synchronized String state() {
        return state;
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }
}
