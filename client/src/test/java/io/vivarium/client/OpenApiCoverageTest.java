package io.vivarium.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

/** The client has a method for every operation of docs/openapi.json a program calls, and none for an operation it lacks. */
class OpenApiCoverageTest {
    /** The daemons' own protocol between a master and its nodes: not a client's (docs/fleet-node.md). */
    private static final Set<String> BETWEEN_DAEMONS = Set.of("GET /v1/node/hello", "GET /v1/node/sandboxes",
            "POST /v1/node/register", "POST /v1/node/poll", "POST /v1/node/results", "POST /v1/node/images/tickets",
            "GET /v1/node/images/file", "POST /v1/node/images/fetch", "GET /v1/node/images");

    @Test
    void everyOperationAProgramCallsHasAMethod() throws Exception {
        JsonNode doc = new ObjectMapper().readTree(Files.readAllBytes(Path.of("..", "docs", "openapi.json")));
        Set<String> documented = new TreeSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> paths = doc.get("paths").fields(); paths.hasNext();) {
            Map.Entry<String, JsonNode> path = paths.next();
            for (Iterator<String> methods = path.getValue().fieldNames(); methods.hasNext();) {
                String method = methods.next();
                if (!method.equals("parameters")) {
                    documented.add(method.toUpperCase() + " " + path.getKey());
                }
            }
        }
        documented.removeAll(BETWEEN_DAEMONS);
        Set<String> called = new TreeSet<>();
        for (Class<?> area : List.of(VivariumClient.class, Sandboxes.class, Commands.class, Snapshots.class, Vms.class,
                Administration.class, Fleet.class, Ports.class, Volumes.class, Templates.class)) {
            for (Method m : area.getDeclaredMethods()) {
                Route route = m.getAnnotation(Route.class);
                if (route != null) {
                    called.addAll(List.of(route.value()));
                }
            }
        }
        assertEquals(documented, called, "a documented operation without a client method, or a method for no operation: "
                + "add the method (with @Route) to the client, or the operation to the document");
    }
}
