package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.vivarium.testkit.vmm.ApiDocument;
import io.vivarium.testkit.vmm.FakeGuest;
import io.vivarium.testkit.vmm.FakeVmm.Answer;
import io.vivarium.testkit.vmm.FakeVmm.Received;
import io.vivarium.testkit.vmm.FakeVmm.Rules;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * What one Firecracker process enforces that its document says only in prose, for a
 * {@link io.vivarium.testkit.vmm.FakeVmm}: configuration is pre-boot only, a start needs a kernel,
 * a snapshot is of a paused microVM and a diff one needs dirty page tracking, a load goes only into
 * a process nothing was configured in and needs the files a create wrote, and the vsock's socket is
 * bound by the process, so one a process before left is in the way. Refusals are 400 with a
 * {@code fault_message}, in Firecracker's words.
 */
final class FirecrackerRules implements Rules {
    /** Firecracker's document of the version {@link FirecrackerApi} targets, copied unchanged. */
    static final ApiDocument DOCUMENT = ApiDocument.of(FirecrackerRules.class,
            "/firecracker/firecracker-" + FirecrackerApi.TARGET + ".yaml");

    private static final ObjectMapper JSON = new ObjectMapper();

    private final FakeGuest guest;
    private final Set<String> configured = new HashSet<>();
    private String state = "Not started";
    /** Whether the microVM tracks the pages its guest writes: set by its machine configuration or its load. */
    private boolean tracksDirtyPages;
    private String vsockSocket;

    /** A guest of nothing: its vsock socket a plain file, enough to be in a relaunch's way. */
    FirecrackerRules() {
        this(socket -> Files.createFile(socket));
    }

    FirecrackerRules(FakeGuest guest) {
        this.guest = guest;
    }

    @Override
    public Answer refusal(String message) {
        return new Answer(400, JSON.createObjectNode().put("fault_message", message));
    }

    @Override
    public Answer answer(Received request) throws IOException {
        JsonNode body = request.body();
        String operation = request.method() + " " + (request.path().startsWith("/drives/") ? "/drives/" : request.path());
        switch (operation) {
            case "GET /":
                return Answer.ok(JSON.createObjectNode().put("app_name", "Firecracker").put("id", "fake")
                        .put("state", state).put("vmm_version", FirecrackerApi.TARGET));
            case "GET /version":
                return Answer.ok(JSON.createObjectNode().put("firecracker_version", FirecrackerApi.TARGET));
            case "PUT /machine-config", "PUT /boot-source", "PUT /drives/", "PUT /vsock":
                if (!state.equals("Not started")) {
                    return refusal("The requested operation is not supported after starting the microVM.");
                }
                configured.add(operation);
                if (operation.equals("PUT /machine-config")) {
                    tracksDirtyPages = body.path("track_dirty_pages").asBoolean();
                } else if (operation.equals("PUT /vsock")) {
                    vsockSocket = body.get("uds_path").asText();
                }
                return Answer.done();
            case "PUT /actions":
                return action(body.get("action_type").asText());
            case "PATCH /vm":
                if (state.equals("Not started")) {
                    return refusal("The microVM is not started yet.");
                }
                boolean pause = body.get("state").asText().equals("Paused");
                if (pause) {
                    guest.pause();
                } else {
                    guest.resume();
                }
                state = pause ? "Paused" : "Running";
                return Answer.done();
            case "PUT /snapshot/create":
                return create(body);
            case "PUT /snapshot/load":
                return load(body);
            default:
                return refusal("Invalid request method and/or path: " + request.method() + " " + request.path() + ".");
        }
    }

    private Answer action(String type) throws IOException {
        if (!type.equals("InstanceStart")) {
            if (state.equals("Not started")) {
                return refusal("The microVM is not started yet.");
            }
            if (type.equals("SendCtrlAltDel")) {
                guest.shutdown(); // a guest booted with reboot=k resets, which ends Firecracker
            }
            return Answer.done();
        }
        if (!state.equals("Not started")) {
            return refusal("The requested operation is not supported after starting the microVM.");
        }
        if (!configured.contains("PUT /boot-source")) {
            return refusal("Cannot start microvm without kernel configuration.");
        }
        Answer bound = bindVsock(null);
        if (bound != null) {
            return bound;
        }
        state = "Running";
        return Answer.done();
    }

    private Answer create(JsonNode body) throws IOException {
        if (!state.equals("Paused")) {
            return refusal("Cannot save the microVM state: the microVM is not paused.");
        }
        boolean diff = body.path("snapshot_type").asText("Full").equals("Diff");
        if (diff && !tracksDirtyPages) {
            return refusal("Diff snapshots are not allowed on uVMs with dirty page tracking disabled.");
        }
        ObjectNode saved = JSON.createObjectNode().put("vsock", vsockSocket).put("diff", diff);
        Files.writeString(Path.of(body.get("snapshot_path").asText()), JSON.writeValueAsString(saved));
        guest.save(Path.of(body.get("mem_file_path").asText()));
        return Answer.done();
    }

    private Answer load(JsonNode body) throws IOException {
        if (!state.equals("Not started") || !configured.isEmpty()) {
            return refusal("Loading a microVM snapshot not allowed after configuring boot-specific resources.");
        }
        Path snapshot = Path.of(body.get("snapshot_path").asText());
        Path memory = Path.of(body.path("mem_backend").path("backend_path").asText(body.path("mem_file_path").asText()));
        if (!Files.isRegularFile(snapshot) || !Files.isRegularFile(memory)) {
            return refusal("Cannot open the snapshot file or the memory file: No such file or directory (os error 2)");
        }
        vsockSocket = body.has("vsock_override") ? body.get("vsock_override").get("uds_path").asText()
                : JSON.readTree(Files.readString(snapshot)).path("vsock").asText(null);
        tracksDirtyPages = body.path("track_dirty_pages").asBoolean();
        Answer bound = bindVsock(memory);
        if (bound != null) {
            return bound;
        }
        state = body.path("resume_vm").asBoolean() ? "Running" : "Paused";
        return Answer.done();
    }

    /**
     * Binds the vsock's socket as Firecracker does when its device comes up (a file already there is
     * in the way), for a guest booted or, with the {@code memory} a snapshot wrote, restored.
     */
    private Answer bindVsock(Path memory) throws IOException {
        if (vsockSocket == null) {
            return null;
        }
        Path path = Path.of(vsockSocket);
        if (Files.exists(path)) {
            return refusal("Cannot create the vsock device: Error binding the host-side Unix socket: "
                    + "Address in use (os error 98)");
        }
        if (memory == null) {
            guest.boot(path);
        } else {
            guest.restore(memory, path);
        }
        return null;
    }
}
