package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.Route;

import org.junit.jupiter.api.Test;

class RouterTest {
    private final Router router = new Router(new ApiSurface() {
        @Override
        public String prefix() {
            return "/v1";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route("GET", "/sandboxes/{id}", Role.USER, 200, r -> "get"),
                    new Route("DELETE", "/sandboxes/{id}", Role.USER, 204, r -> null),
                    new Route("POST", "/sandboxes/{id}/exec", Role.ADMIN, 200, r -> "exec"),
                    new Route("GET", "/sandboxes/{id}/ports/{port}", Role.USER, 200, r -> "port"),
                    new Route(Route.ANY_METHOD, "/sandboxes/{id}/ports/{port}/{path*}", Role.USER, 200, r -> "proxy"));
        }
    });

    @Test
    void bindsParametersAndReportsAllowedMethods() {
        var m = router.match("POST", List.of("sandboxes", "sb-1", "exec"), "/sandboxes/sb-1/exec").orElseThrow();
        assertEquals(Map.of("id", "sb-1"), m.params());
        var wrongMethod = router.match("PUT", List.of("sandboxes", "sb-1"), "/sandboxes/sb-1").orElseThrow();
        assertNull(wrongMethod.route());
        assertEquals(Set.of("DELETE", "GET"), wrongMethod.allowed());
        assertTrue(router.match("GET", List.of("sandboxes"), "/sandboxes").isEmpty());
    }

    @Test
    void aTailRouteTakesEveryMethodAndTheRestOfThePathAsSent() {
        List<String> port = List.of("sandboxes", "sb-1", "ports", "8000");
        assertEquals("port", router.match("GET", port, "/sandboxes/sb-1/ports/8000").orElseThrow().route().handler().handle(null));
        var root = router.match("GET", port, "/sandboxes/sb-1/ports/8000/").orElseThrow();
        assertEquals(Map.of("id", "sb-1", "port", "8000", "path", ""), root.params());
        List<String> deep = List.of("sandboxes", "sb-1", "ports", "8000", "a b", "c");
        var m = router.match("PATCH", deep, "/sandboxes/sb-1/ports/8000/a%20b/c/").orElseThrow();
        assertEquals("a%20b/c/", m.params().get("path"));
        assertEquals("/sandboxes/sb-1/ports/8000/", Router.tailBase(m.route(), deep));
    }

    @Test
    void readsQueryParametersFromTheQueryStringOnly() {
        assertEquals(Map.of(), HttpEdge.query(null));
        assertEquals(Map.of("a", "1 2", "b", "", "c", "x=y"), HttpEdge.query("a=1+2&b&&c=x%3Dy&a=again"));
        ApiException e = assertThrows(ApiException.class, () -> HttpEdge.query("a=%zz"));
        assertEquals(400, e.status());
    }

    @Test
    void decodesSegments() {
        assertEquals(List.of("v1", "a b", "c+d"), HttpEdge.segments("/v1//a%20b/c+d/"));
    }
}
