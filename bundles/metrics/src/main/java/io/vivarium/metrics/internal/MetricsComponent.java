package io.vivarium.metrics.internal;

import java.util.List;
import java.util.function.Function;

import io.vivarium.api.Role;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;
import io.vivarium.api.spi.RuntimeObserver;

import org.osgi.service.component.ComponentServiceObjects;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * {@code GET /metrics}: served by the http edge as a surface of its own (so behind the bearer
 * token, with an admin role: it names every tenant's sandboxes), and fed as the
 * {@link RuntimeObserver} the edge, core and the plugin administration tell what they do. Without
 * this bundle there is no {@code /metrics} and they observe nothing.
 *
 * <p>Core is asked only when scraped, never while this component activates: core binds this
 * component as its observer, so taking core's service object here would close a cycle that SCR
 * resolves by leaving core's observer unbound on some starts (core's events then never counted).
 */
@Component(service = {ApiSurface.class, RuntimeObserver.class})
public class MetricsComponent extends VivariumMetrics implements ApiSurface {

    private final List<Route> routes;

    @Activate
    public MetricsComponent(@Reference(service = SandboxService.class) ComponentServiceObjects<SandboxService> core) {
        super(() -> ask(core, SandboxService::census), () -> ask(core, SandboxService::backends));
        routes = List.of(new Route("GET", "", Role.OPERATOR, 200,
                r -> BinaryBody.of(VivariumMetrics.CONTENT_TYPE, scrape()), 0));
    }

    private static <T> T ask(ComponentServiceObjects<SandboxService> core, Function<SandboxService, T> question) {
        SandboxService service = core.getService();
        try {
            return question.apply(service);
        } finally {
            core.ungetService(service);
        }
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
