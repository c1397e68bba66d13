package io.vivarium.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.vivarium.api.VolumeInfo;

import com.fasterxml.jackson.core.type.TypeReference;

/**
 * Named volumes (docs/volumes.md): file systems of a fixed size that outlive the sandboxes that
 * mount them; a sandbox mounts them at create ({@link io.vivarium.api.CreateSandboxRequest#volumes()}).
 */
public final class Volumes {
    private final Http http;

    Volumes(Http http) {
        this.http = http;
    }

    private static String of(String name) {
        return "/v1/volumes/" + Http.segment(name);
    }

    /** Makes an empty volume of {@code sizeMib}. */
    @Route("POST /v1/volumes")
    public VolumeInfo create(String name, int sizeMib) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("name", name);
        body.put("size_mib", sizeMib);
        return http.json("POST", "/v1/volumes", body, VolumeInfo.class);
    }

    @Route("GET /v1/volumes")
    public List<VolumeInfo> list() {
        return http.json("GET", "/v1/volumes", null, new TypeReference<List<VolumeInfo>>() { });
    }

    @Route("GET /v1/volumes/{name}")
    public VolumeInfo get(String name) {
        return http.json("GET", of(name), null, VolumeInfo.class);
    }

    /** Deletes a volume and its files; a 409 {@link VivariumException} while a sandbox mounts it. */
    @Route("DELETE /v1/volumes/{name}")
    public void delete(String name) {
        http.noContent("DELETE", of(name));
    }
}
