package io.vivarium.fleet.internal;

import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.Route;

/**
 * The fleet's routes, beside the rest of {@code /v1}: the master's {@code /nodes} and
 * {@code /node/revoke/{id}}, and a node's {@code /node/hello} and {@code /node/sandboxes}, which
 * the master calls with the node's pairing secret. All are daemon-wide: operator only.
 */
final class FleetSurface implements ApiSurface {
    private final List<Route> routes;

    FleetSurface(Nodes nodes, Supplier<NodeHello> hello, Supplier<List<SandboxInfo>> census) {
        this.routes = List.of(
                new Route("POST", "/nodes", Role.OPERATOR, 201, r -> unchecked(() -> nodes.add(r.body(AddNodeRequest.class)))),
                new Route("GET", "/nodes", Role.OPERATOR, 200, r -> nodes.list()),
                new Route("POST", "/node/revoke/{id}", Role.OPERATOR, 200, r -> unchecked(() -> {
                    nodes.revoke(r.pathParam("id"));
                    return nodes.list().stream().filter(n -> n.id().equals(r.pathParam("id"))).findFirst().orElseThrow();
                })),
                new Route("GET", "/node/hello", Role.OPERATOR, 200, r -> hello.get()),
                new Route("GET", "/node/sandboxes", Role.OPERATOR, 200, r -> census.get()));
    }

    private interface Io<T> {
        T get() throws IOException;
    }

    private static <T> T unchecked(Io<T> call) {
        try {
            return call.get();
        } catch (IOException e) {
            throw ApiException.internal("cannot write the master's node records: " + e.getMessage(), e);
        }
    }

    @Override
    public String prefix() {
        return "/v1";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
