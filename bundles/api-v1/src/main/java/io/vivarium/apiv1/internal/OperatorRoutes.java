package io.vivarium.apiv1.internal;

import java.util.List;
import java.util.function.Supplier;

import io.vivarium.api.PluginService;
import io.vivarium.api.Role;
import io.vivarium.api.http.Route;

/**
 * The {@code /v1} routes of daemon-wide administration, bundles ("plugins") and features: for
 * operators only, since a plugin is code that runs inside the daemon and a feature is switched for
 * every tenant.
 */
final class OperatorRoutes {

    /** Bundle jars are uploaded as the raw request body. */
    static final long MAX_JAR_BYTES = 64L << 20;

    private OperatorRoutes() {
    }

    static List<Route> of(Supplier<PluginService> plugins) {
        return List.of(
                new Route("GET", "/plugins", Role.OPERATOR, 200, r -> plugins.get().plugins()),
                new Route("POST", "/plugins", Role.OPERATOR, 201, r -> plugins.get().install(r.rawBody()), MAX_JAR_BYTES),
                new Route("PUT", "/plugins/{name}", Role.OPERATOR, 200,
                        r -> plugins.get().update(r.pathParam("name"), r.rawBody()), MAX_JAR_BYTES),
                new Route("DELETE", "/plugins/{name}", Role.OPERATOR, 204, r -> {
                    plugins.get().uninstall(r.pathParam("name"));
                    return null;
                }),
                new Route("GET", "/features", Role.OPERATOR, 200, r -> plugins.get().features()),
                new Route("POST", "/features/{name}/enable", Role.OPERATOR, 200,
                        r -> plugins.get().enable(r.pathParam("name"))),
                new Route("POST", "/features/{name}/disable", Role.OPERATOR, 200,
                        r -> plugins.get().disable(r.pathParam("name"))));
    }
}
