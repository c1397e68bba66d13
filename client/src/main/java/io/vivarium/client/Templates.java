package io.vivarium.client;

import java.util.List;

import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;

import com.fasterxml.jackson.core.type.TypeReference;

/**
 * Operator templates (docs/templates.md): sandboxes made from OCI images, with
 * {@link io.vivarium.api.CreateSandboxRequest#template()} at create. Making and deleting one needs
 * an operator token; every role lists them.
 */
public final class Templates {
    private final Http http;

    Templates(Http http) {
        this.http = http;
    }

    private static String of(String name) {
        return "/v1/templates/" + Http.segment(name);
    }

    /**
     * Makes a template; its image is pulled and unpacked as a build. The answer is {@link TemplateInfo#READY}
     * when the image was ready at once, {@link TemplateInfo#BUILDING} otherwise: {@link #get} shows the
     * build's progress until it is ready or {@link TemplateInfo#FAILED}.
     */
    @Route("POST /v1/templates")
    public TemplateInfo create(TemplateRequest request) {
        return http.json("POST", "/v1/templates", request, TemplateInfo.class);
    }

    @Route("GET /v1/templates")
    public List<TemplateInfo> list() {
        return http.json("GET", "/v1/templates", null, new TypeReference<List<TemplateInfo>>() { });
    }

    @Route("GET /v1/templates/{name}")
    public TemplateInfo get(String name) {
        return http.json("GET", of(name), null, TemplateInfo.class);
    }

    /** Deletes a template; a 409 {@link VivariumException} while sandboxes made from it run. */
    @Route("DELETE /v1/templates/{name}")
    public void delete(String name) {
        http.noContent("DELETE", of(name));
    }
}
