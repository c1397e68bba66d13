package io.vivarium.apiv1.internal;

import java.net.URI;
import java.time.Duration;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.PortService;
import io.vivarium.api.Role;
import io.vivarium.api.http.Route;
import io.vivarium.api.http.RouteRequest;
import io.vivarium.api.http.Upstream;

/**
 * Exposed ports (docs/network.md): expose, list and close them (admins: a way into the sandbox),
 * and {@code /sandboxes/{id}/ports/{port}/...}, which passes any request, a WebSocket too, on to
 * the server on that port (users, or a signed URL).
 */
final class PortRoutes {
    /** Body of {@code POST /sandboxes/{id}/ports}. */
    record ExposeRequest(Integer port, Long expiresInSecs) {
    }

    private PortRoutes() {
    }

    static List<Route> of(PortService ports) {
        return List.of(
                new Route("POST", "/sandboxes/{id}/ports", Role.ADMIN, 201, r -> {
                    ExposeRequest body = r.body(ExposeRequest.class);
                    if (body.port() == null) {
                        throw ApiException.badRequest("port is required: the TCP port inside the sandbox, e.g. {\"port\": 8000}");
                    }
                    Duration lifetime = body.expiresInSecs() == null ? PortService.DEFAULT_TOKEN_LIFETIME
                            : Duration.ofSeconds(body.expiresInSecs());
                    return PortBody.of(r.pathParam("id"), ports.expose(r.caller(), r.pathParam("id"), body.port(), lifetime));
                }),
                new Route("GET", "/sandboxes/{id}/ports", Role.USER, 200, r -> ports.list(r.caller(), r.pathParam("id"))
                        .stream().map(p -> PortBody.of(r.pathParam("id"), p)).toList()),
                new Route("GET", "/sandboxes/{id}/ports/{port}", Role.USER, 200,
                        r -> PortBody.of(r.pathParam("id"), ports.get(r.caller(), r.pathParam("id"), port(r)))),
                new Route("DELETE", "/sandboxes/{id}/ports/{port}", Role.ADMIN, 204, r -> {
                    ports.close(r.caller(), r.pathParam("id"), port(r));
                    return null;
                }),
                new Route(Route.ANY_METHOD, "/sandboxes/{id}/ports/{port}/{path*}", Role.USER, 200, r -> {
                    int port = port(r);
                    String id = r.pathParam("id");
                    PortService.Forwarding forwarding = ports.forward(r.caller(), id, port);
                    try {
                        String unreachable = forwarding.unreachable() != null ? forwarding.unreachable() : "nothing answers on port "
                                + port + " in sandbox " + id + ": start a server there that listens on 0.0.0.0:" + port
                                + " (not only 127.0.0.1)";
                        return new Upstream(URI.create(forwarding.upstream() + r.pathParam("path")), unreachable, forwarding.done(),
                                forwarding.tls(), forwarding.headers());
                    } catch (RuntimeException e) {
                        forwarding.done().run();
                        throw e;
                    }
                }));
    }

    private static int port(RouteRequest r) {
        String p = r.pathParam("port");
        try {
            return Integer.parseInt(p);
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("port must be a number 1 to 65535, not \"" + p + "\"");
        }
    }
}
