package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

/** Every request the {@code plugins} and {@code features} commands send is an operation of docs/openapi.json, with the status they expect. */
class AdminClientContractTest {

    @Test
    void everyCommandCallsADocumentedOperation() throws Exception {
        JsonNode paths = new ObjectMapper().readTree(Path.of("../docs/openapi.json").toFile()).get("paths");
        List<List<String>> commands = List.of(
                List.of("plugins", "list"), List.of("plugins", "install", "x.jar"), List.of("plugins", "update", "NAME", "x.jar"),
                List.of("plugins", "remove", "NAME"), List.of("features", "list"), List.of("features", "enable", "NAME"),
                List.of("features", "disable", "NAME"));
        for (List<String> c : commands) {
            AdminClient.Call call = AdminClient.parse(c.get(0), c.subList(1, c.size()));
            assertNotNull(call, c.toString());
            JsonNode op = operation(paths, call.method(), call.path());
            assertNotNull(op, c + " sends " + call.method() + " " + call.path() + ", which docs/openapi.json does not document");
            assertTrue(op.path("responses").has(String.valueOf(call.expect())),
                    c + " expects " + call.expect() + ", which docs/openapi.json does not list for " + call.method() + " " + call.path());
        }
    }

    private static JsonNode operation(JsonNode paths, String method, String path) {
        String[] segments = path.split("/", -1);
        for (var it = paths.fields(); it.hasNext(); ) {
            var entry = it.next();
            String[] template = entry.getKey().split("/", -1);
            boolean match = template.length == segments.length;
            for (int i = 0; match && i < template.length; i++) {
                match = template[i].startsWith("{") || template[i].equals(segments[i]);
            }
            if (match && entry.getValue().has(method.toLowerCase())) {
                return entry.getValue().get(method.toLowerCase());
            }
        }
        return null;
    }
}
