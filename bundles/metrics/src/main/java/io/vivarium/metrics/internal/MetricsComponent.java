package io.vivarium.metrics.internal;

import java.util.List;

import io.vivarium.api.Role;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;
import io.vivarium.api.spi.RuntimeObserver;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * {@code GET /metrics}: served by the http edge as a surface of its own (so behind the bearer
 * token, with an admin role: it names every tenant's sandboxes), and fed as the
 * {@link RuntimeObserver} the edge, core and the plugin administration tell what they do. Without
 * this bundle there is no {@code /metrics} and they observe nothing.
 */
@Component(service = {ApiSurface.class, RuntimeObserver.class})
public class MetricsComponent extends VivariumMetrics implements ApiSurface {

    private final List<Route> routes;

    @Activate
    public MetricsComponent(@Reference SandboxService sandboxes) {
        super(() -> sandboxes.census(), () -> sandboxes.backends());
        routes = List.of(new Route("GET", "", Role.OPERATOR, 200,
                r -> BinaryBody.of(VivariumMetrics.CONTENT_TYPE, scrape()), 0));
    }

    @Override
    public String prefix() {
        return "/metrics";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
