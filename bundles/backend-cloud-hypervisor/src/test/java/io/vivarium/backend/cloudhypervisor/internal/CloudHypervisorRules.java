package io.vivarium.backend.cloudhypervisor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.testkit.vmm.ApiDocument;
import io.vivarium.testkit.vmm.FakeGuest;
import io.vivarium.testkit.vmm.FakeVmm.Answer;
import io.vivarium.testkit.vmm.FakeVmm.Received;
import io.vivarium.testkit.vmm.FakeVmm.Rules;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What one Cloud Hypervisor process enforces beyond its document's schemas, for a
 * {@link io.vivarium.testkit.vmm.FakeVmm}: the statuses the document gives (404 without a VM or,
 * for a restore, with one; 405 in the wrong state), a snapshot only of a paused VM into a directory
 * that exists, a restore only from one a snapshot wrote, and the vsock's socket bound at boot and at
 * restore (the snapshot keeps its path: one a process before left is in the way). Refusals are text,
 * as Cloud Hypervisor's are.
 */
final class CloudHypervisorRules implements Rules {
    /** Cloud Hypervisor's document of the version {@link CloudHypervisorApi} targets, copied unchanged. */
    static final ApiDocument DOCUMENT = ApiDocument.of(CloudHypervisorRules.class,
            "/cloud-hypervisor/cloud-hypervisor-" + CloudHypervisorApi.TARGET + ".yaml");

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PREFIX = "/api/v1";
    /** The guest's memory in a snapshot's directory. */
    private static final String MEMORY = "memory-ranges";

    private final FakeGuest guest;
    private JsonNode config;
    private String state;

    /** A guest of nothing: its vsock socket a plain file, enough to be in a relaunch's way. */
    CloudHypervisorRules() {
        this(socket -> Files.createFile(socket));
    }

    CloudHypervisorRules(FakeGuest guest) {
        this.guest = guest;
    }

    @Override
    public Answer refusal(String message) {
        return Answer.text(400, message);
    }

    @Override
    public Answer answer(Received request) throws IOException {
        String operation = request.method() + " " + request.path().substring(PREFIX.length());
        if (operation.equals("GET /vmm.ping")) {
            return Answer.ok(JSON.createObjectNode().put("version", "v" + CloudHypervisorApi.TARGET));
        } else if (operation.equals("PUT /vmm.shutdown")) {
            return Answer.done();
        } else if (operation.equals("PUT /vm.create")) {
            if (config != null) {
                return Answer.text(500, "Error creating VM: VmAlreadyCreated");
            }
            config = request.body();
            state = "Created";
            return Answer.done();
        } else if (operation.equals("PUT /vm.restore")) {
            return restore(request.body());
        } else if (config == null) {
            return Answer.text(404, "Error: VmNotCreated");
        }
        switch (operation) {
            case "GET /vm.info":
                return Answer.ok(JSON.createObjectNode().put("state", state).set("config", config));
            case "PUT /vm.boot":
                if (!state.equals("Created") && !state.equals("Shutdown")) {
                    return Answer.text(500, "Error booting VM: InvalidStateTransition(" + state + ", Running)");
                }
                return bindVsock("Running", null);
            case "PUT /vm.pause":
                if (state.equals("Running")) {
                    guest.pause();
                }
                return move("Running", "Paused");
            case "PUT /vm.resume":
                if (state.equals("Paused")) {
                    guest.resume();
                }
                return move("Paused", "Running");
            case "PUT /vm.shutdown":
                if (state.equals("Created")) {
                    return Answer.text(405, "Error shutting down VM: VmNotBooted");
                }
                guest.shutdown();
                return moveTo("Shutdown");
            case "PUT /vm.delete":
                config = null;
                state = null;
                return Answer.done();
            case "PUT /vm.snapshot":
                return snapshot(request.body());
            default:
                return Answer.text(404, "unknown request " + request.method() + " " + request.path());
        }
    }

    private Answer move(String from, String to) {
        return state.equals(from) ? moveTo(to) : Answer.text(405, "Error: InvalidStateTransition(" + state + ", " + to + ")");
    }

    private Answer moveTo(String to) {
        state = to;
        return Answer.done();
    }

    private Answer snapshot(JsonNode body) throws IOException {
        if (state.equals("Created")) {
            return Answer.text(405, "Error snapshotting VM: VmNotBooted");
        }
        if (!state.equals("Paused")) {
            return Answer.text(500, "Error snapshotting VM: the VM must be paused first (it is " + state + ")");
        }
        Path dir = directory(body.path("destination_url").asText());
        if (dir == null || !Files.isDirectory(dir)) {
            return Answer.text(500, "Error snapshotting VM: no directory " + body.path("destination_url").asText());
        }
        Files.writeString(dir.resolve("config.json"), JSON.writeValueAsString(config));
        Files.writeString(dir.resolve("state.json"), "{}");
        guest.save(dir.resolve(MEMORY));
        return Answer.done();
    }

    private Answer restore(JsonNode body) throws IOException {
        if (config != null) {
            return Answer.text(404, "Error restoring VM: VmAlreadyCreated");
        }
        Path dir = directory(body.path("source_url").asText());
        if (dir == null || !Files.isRegularFile(dir.resolve("config.json")) || !Files.isRegularFile(dir.resolve("state.json"))) {
            return Answer.text(400, "Error restoring VM: cannot read a snapshot at " + body.path("source_url").asText());
        }
        config = JSON.readTree(Files.readString(dir.resolve("config.json")));
        state = "Paused";
        Answer bound = bindVsock(body.path("resume").asBoolean() ? "Running" : "Paused", dir.resolve(MEMORY));
        if (bound.status() != 204) {
            config = null;
            state = null;
        }
        return bound;
    }

    /**
     * Binds the vsock's socket as Cloud Hypervisor does when the device comes up, for a guest booted
     * or, with the {@code memory} a snapshot wrote, restored; then is in state {@code to}.
     */
    private Answer bindVsock(String to, Path memory) throws IOException {
        String socket = config.path("vsock").path("socket").asText(null);
        if (socket != null) {
            if (Files.exists(Path.of(socket))) {
                return Answer.text(500, "Error: VmBoot(DeviceManager(CreateVirtioVsock(BindUnixSocket(Os { code: 98, "
                        + "kind: AddrInUse, message: \"Address in use\" }))))");
            }
            if (memory == null) {
                guest.boot(Path.of(socket));
            } else {
                guest.restore(memory, Path.of(socket));
            }
        }
        return moveTo(to);
    }

    private static Path directory(String url) {
        return url.startsWith("file://") ? Path.of(URI.create(url)) : null;
    }
}
