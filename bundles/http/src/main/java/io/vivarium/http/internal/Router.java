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
        routes.sort(java.util.Comparator.comparing(c -> !hasTail(c.segments())));
    }

    String prefix() {
        return prefix;
    }

    /**
     * Matches {@code segments} (the decoded path below the prefix; {@code rawPath} is the same path as
     * sent, from its first {@code /}); empty if no template fits the path.
     */
    Optional<Match> match(String method, List<String> segments, String rawPath) {
        Set<String> allowed = new TreeSet<>();
        for (Compiled c : routes) { // a tail route before the others: ".../ports/8000/" is the proxy, ".../ports/8000" the port
            Map<String, String> params = bind(c.segments(), segments, rawPath);
            if (params == null) {
                continue;
            }
            if (c.route().method().equals(method) || c.route().method().equals(Route.ANY_METHOD)) {
                return Optional.of(new Match(c.route(), params, Set.of()));
            }
            allowed.add(c.route().method());
        }
        return allowed.isEmpty() ? Optional.empty() : Optional.of(new Match(null, Map.of(), allowed));
    }

    /** The path a route's {@code {name*}} tail hangs off: the matched path up to the tail, ending in {@code /}. */
    static String tailBase(Route route, List<String> segments) {
        int fixed = split(route.template()).length - 1;
        return "/" + String.join("/", segments.subList(0, fixed)) + "/";
    }

    private static Map<String, String> bind(String[] template, List<String> path, String rawPath) {
        boolean tail = hasTail(template);
        int fixed = tail ? template.length - 1 : template.length;
        if (tail ? path.size() < fixed || rawTailStart(rawPath, fixed) >= rawPath.length() : path.size() != fixed) {
            return null; // a tail route needs at least the "/" after its fixed segments
        }
        Map<String, String> params = new LinkedHashMap<>();
        for (int i = 0; i < fixed; i++) {
            String t = template[i];
            if (t.startsWith("{") && t.endsWith("}")) {
                params.put(t.substring(1, t.length() - 1), path.get(i));
            } else if (!t.equals(path.get(i))) {
                return null;
            }
        }
        if (tail) {
            String t = template[fixed];
            params.put(t.substring(1, t.length() - 2), rawTail(rawPath, fixed));
        }
        return params;
    }

    private static boolean hasTail(String[] template) {
        return template.length > 0 && template[template.length - 1].startsWith("{")
                && template[template.length - 1].endsWith("*}");
    }

    /** {@code rawPath} past its first {@code skip} non-empty segments, without the {@code /} before it. */
    static String rawTail(String rawPath, int skip) {
        int i = rawTailStart(rawPath, skip);
        return i < rawPath.length() ? rawPath.substring(i + 1) : "";
    }

    /** The index of the {@code /} after the first {@code skip} non-empty segments of {@code rawPath}, or its length. */
    private static int rawTailStart(String rawPath, int skip) {
        int i = 0;
        for (int seen = 0; seen < skip; seen++) {
            while (i < rawPath.length() && rawPath.charAt(i) == '/') {
                i++;
            }
            while (i < rawPath.length() && rawPath.charAt(i) != '/') {
                i++;
            }
        }
        return i;
    }

    static String[] split(String path) {
        return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }
}
