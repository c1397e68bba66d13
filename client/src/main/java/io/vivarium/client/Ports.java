package io.vivarium.client;

import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.type.TypeReference;

/**
 * Exposed ports (docs/network.md#exposed-ports): a server a sandbox runs, reached through the
 * daemon with this client's token, or by anyone holding a port's signed URL until it expires.
 */
public final class Ports {
    private final Http http;

    Ports(Http http) {
        this.http = http;
    }

    /**
     * An exposed port.
     *
     * @param url where it is reached with a bearer token (absolute, on this client's daemon)
     * @param signedUrl where it is reached without one, until {@code expiresAt}
     */
    public record PortUrls(int port, URI url, URI signedUrl, Instant expiresAt) {
    }

    /** The daemon's answer: paths, made absolute for {@link PortUrls}. */
    private record PortBody(int port, String url, String signedUrl, String expiresAt) {
        PortUrls on(URI base) {
            return new PortUrls(port, base.resolve(url), base.resolve(signedUrl), Instant.parse(expiresAt));
        }
    }

    private static String of(String id) {
        return "/v1/sandboxes/" + Http.segment(id) + "/ports";
    }

    /** Exposes {@code port} of a sandbox with a network, its signed URL good for an hour. */
    public PortUrls expose(String id, int port) {
        return expose(id, port, null);
    }

    /** Exposes {@code port}, its signed URL good for {@code signedUrlLifetime} (1 s to 7 days; null: an hour). */
    @Route("POST /v1/sandboxes/{id}/ports")
    public PortUrls expose(String id, int port, Duration signedUrlLifetime) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("port", port);
        if (signedUrlLifetime != null) {
            body.put("expires_in_secs", signedUrlLifetime.toSeconds());
        }
        return http.json("POST", of(id), body, PortBody.class).on(http.base());
    }

    @Route("GET /v1/sandboxes/{id}/ports")
    public List<PortUrls> list(String id) {
        return http.json("GET", of(id), null, new TypeReference<List<PortBody>>() { }).stream().map(p -> p.on(http.base())).toList();
    }

    @Route("GET /v1/sandboxes/{id}/ports/{port}")
    public PortUrls get(String id, int port) {
        return http.json("GET", of(id) + "/" + port, null, PortBody.class).on(http.base());
    }

    /** Closes the port: its URLs stop working. */
    @Route("DELETE /v1/sandboxes/{id}/ports/{port}")
    public void close(String id, int port) {
        http.noContent("DELETE", of(id) + "/" + port);
    }

    /**
     * Sends a request to the server on an exposed port, through the daemon: {@code path} is the
     * server's own (e.g. {@code /api/items?x=1}); its answer comes back whatever its status (a 502
     * from the daemon when nothing answers there).
     */
    @Route({"GET /v1/sandboxes/{id}/ports/{port}/{path}", "PUT /v1/sandboxes/{id}/ports/{port}/{path}",
            "POST /v1/sandboxes/{id}/ports/{port}/{path}", "DELETE /v1/sandboxes/{id}/ports/{port}/{path}",
            "PATCH /v1/sandboxes/{id}/ports/{port}/{path}", "HEAD /v1/sandboxes/{id}/ports/{port}/{path}",
            "OPTIONS /v1/sandboxes/{id}/ports/{port}/{path}"})
    public HttpResponse<byte[]> send(String id, int port, String method, String path, byte[] body, Map<String, String> headers) {
        String rest = path.startsWith("/") ? path.substring(1) : path;
        return http.raw(method, of(id) + "/" + port + "/" + rest, body, headers);
    }
}
