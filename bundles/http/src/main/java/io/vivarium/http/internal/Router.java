package io.vivarium.http.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.Route;

/** Matches a decoded path against the routes of one surface. Immutable; rebuilt when surfaces change. */
final class Router {

    /** A matched route with its bound path parameters, or the methods the path allows. */
    record Match(Route route, Map<String, String> params, Set<String> allowed) {
    }

    private record Compiled(Route route, String[] segments) {
    }

    private final String prefix;
    private final List<Compiled> routes = new ArrayList<>();

    Router(ApiSurface surface) {
        this.prefix = surface.prefix();
        for (Route r : surface.routes()) {
            routes.add(new Compiled(r, split(r.template())));
        }
    }

    String prefix() {
        return prefix;
    }

    /** Matches {@code segments} (the path below the prefix); empty if no template fits the path. */
    Optional<Match> match(String method, List<String> segments) {
        Set<String> allowed = new TreeSet<>();
        for (Compiled c : routes) {
            Map<String, String> params = bind(c.segments(), segments);
            if (params == null) {
                continue;
            }
            if (c.route().method().equals(method)) {
                return Optional.of(new Match(c.route(), params, Set.of()));
            }
            allowed.add(c.route().method());
        }
        return allowed.isEmpty() ? Optional.empty() : Optional.of(new Match(null, Map.of(), allowed));
    }

    private static Map<String, String> bind(String[] template, List<String> path) {
        if (template.length != path.size()) {
            return null;
        }
        Map<String, String> params = new LinkedHashMap<>();
        for (int i = 0; i < template.length; i++) {
            String t = template[i];
            if (t.startsWith("{") && t.endsWith("}")) {
                params.put(t.substring(1, t.length() - 1), path.get(i));
            } else if (!t.equals(path.get(i))) {
                return null;
            }
        }
        return params;
    }

    static String[] split(String path) {
        return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }
}
