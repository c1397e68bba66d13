package io.vivarium.apiv1.internal;

import java.util.List;
import java.util.function.Supplier;

import io.vivarium.api.PluginService;
import io.vivarium.api.Role;
import io.vivarium.api.http.Route;

/** The admin-only {@code /v1} routes of runtime administration: bundles ("plugins") and features. */
final class AdminRoutes {

    /** Bundle jars are uploaded as the raw request body. */
    static final long MAX_JAR_BYTES = 64L << 20;

    private AdminRoutes() {
    }

    static List<Route> of(Supplier<PluginService> plugins) {
        return List.of(
                new Route("GET", "/plugins", Role.ADMIN, 200, r -> plugins.get().plugins()),
                new Route("POST", "/plugins", Role.ADMIN, 201, r -> plugins.get().install(r.rawBody()), MAX_JAR_BYTES),
                new Route("PUT", "/plugins/{name}", Role.ADMIN, 200,
                        r -> plugins.get().update(r.pathParam("name"), r.rawBody()), MAX_JAR_BYTES),
                new Route("DELETE", "/plugins/{name}", Role.ADMIN, 204, r -> {
                    plugins.get().uninstall(r.pathParam("name"));
                    return null;
                }),
                new Route("GET", "/features", Role.ADMIN, 200, r -> plugins.get().features()),
                new Route("POST", "/features/{name}/enable", Role.ADMIN, 200, r -> plugins.get().enable(r.pathParam("name"))),
                new Route("POST", "/features/{name}/disable", Role.ADMIN, 200, r -> plugins.get().disable(r.pathParam("name"))));
    }
}
