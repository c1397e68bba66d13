package com.example.vivarium.v2;

import java.util.List;
import java.util.Map;

import io.vivarium.api.Role;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.Route;

import org.osgi.service.component.annotations.Component;

/**
 * <b>An example for plugin authors.</b> A second API surface: the http bundle serves it under
 * {@code /v2} next to {@code /v1}, behind the same bearer tokens, body limits and JSON binding,
 * and stops serving it when this bundle goes away. A real surface would take
 * {@link io.vivarium.api.SandboxService} as a {@code @Reference}, as {@code /v1} does.
 */
@Component(service = ApiSurface.class)
public class HelloSurface implements ApiSurface {

    private final List<Route> routes = List.of(
            new Route("GET", "/hello", Role.USER, 200, request -> Map.of("hello", "v2")));

    @Override
    public String prefix() {
        return "/v2";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
