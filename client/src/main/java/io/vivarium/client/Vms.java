package io.vivarium.client;

import java.util.List;

import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;

import com.fasterxml.jackson.core.type.TypeReference;

/** The machine view of sandboxes ({@code /v1/vms}): a VM is a sandbox of a backend that runs machines. */
public final class Vms {
    private final Http http;

    Vms(Http http) {
        this.http = http;
    }

    private static String of(String id) {
        return "/v1/vms/" + Http.segment(id);
    }

    /** Creates a VM; {@code request.backend()} is required. */
    @Route("POST /v1/vms")
    public SandboxInfo create(CreateSandboxRequest request) {
        return http.json("POST", "/v1/vms", request, SandboxInfo.class);
    }

    @Route("GET /v1/vms")
    public List<SandboxInfo> list() {
        return http.json("GET", "/v1/vms", null, new TypeReference<List<SandboxInfo>>() { });
    }

    @Route("GET /v1/vms/{id}")
    public SandboxInfo get(String id) {
        return http.json("GET", of(id), null, SandboxInfo.class);
    }

    @Route("DELETE /v1/vms/{id}")
    public void delete(String id) {
        http.noContent("DELETE", of(id));
    }

    /**
     * Deletes the VM now ({@code ?force=true}): without a VM's freeze of its writable volumes, for one
     * that cannot take it (what its guest had not written back to them is lost).
     */
    @Route("DELETE /v1/vms/{id}")
    public void deleteForcibly(String id) {
        http.noContent("DELETE", of(id) + "?force=true");
    }

    @Route("POST /v1/vms/{id}/stop")
    public SandboxInfo stop(String id) {
        return http.json("POST", of(id) + "/stop", null, SandboxInfo.class);
    }

    @Route("POST /v1/vms/{id}/start")
    public SandboxInfo start(String id) {
        return http.json("POST", of(id) + "/start", null, SandboxInfo.class);
    }

    /** Checkpoints the VM under {@code tag} (its own saved state, not a registry snapshot). */
    @Route("POST /v1/vms/{id}/snapshot")
    public CheckpointInfo checkpoint(String id, String tag) {
        return http.json("POST", of(id) + "/snapshot", new CheckpointRequest(tag), CheckpointInfo.class);
    }

    @Route("POST /v1/vms/{id}/restore")
    public SandboxInfo restore(String id, String tag) {
        return http.json("POST", of(id) + "/restore", new CheckpointRequest(tag), SandboxInfo.class);
    }

    @Route("GET /v1/vms/{id}/checkpoints")
    public List<CheckpointInfo> checkpoints(String id) {
        return http.json("GET", of(id) + "/checkpoints", null, new TypeReference<List<CheckpointInfo>>() { });
    }

    @Route("DELETE /v1/vms/{id}/checkpoints/{tag}")
    public void deleteCheckpoint(String id, String tag) {
        http.noContent("DELETE", of(id) + "/checkpoints/" + Http.segment(tag));
    }
}
