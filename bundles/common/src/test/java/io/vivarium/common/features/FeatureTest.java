package io.vivarium.common.features;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FeatureTest {

    @Test
    void mapsMavenCoordinatesToRepositoryLayout() {
        Feature.FeatureBundle b = Feature.FeatureBundle.of("org.apache.felix:org.apache.felix.scr:2.2.18", 2);
        assertEquals("org/apache/felix/org.apache.felix.scr/2.2.18/org.apache.felix.scr-2.2.18.jar", b.repositoryPath());
        assertEquals(Path.of("/d/system/org/apache/felix/org.apache.felix.scr/2.2.18/org.apache.felix.scr-2.2.18.jar"),
                b.file(Path.of("/d/system")));
        assertEquals("g/h/a/1/a-1-x.zip", Feature.FeatureBundle.of("g.h:a:zip:x:1", 1).repositoryPath());
        assertEquals("io/vivarium/core/0.1.0-SNAPSHOT/core-0.1.0-SNAPSHOT.jar",
                Feature.FeatureBundle.of("io.vivarium:core:0.1.0-SNAPSHOT", 2).repositoryPath());
    }

    @Test
    void readsADescriptor() throws Exception {
        Feature f = Feature.parse("x", """
                {
                  "feature-resource-version": "1.0",
                  "id": "io.vivarium.features:x:1.0.0",
                  "description": "d",
                  "bundles": [
                    {"id": "a:b:1", "start-order": 1},
                    {"id": "a:c:2"},
                    "a:d:3"
                  ],
                  "configurations": {"my.pid": {"k": "v"}}
                }
                """);
        assertEquals("io.vivarium.features:x:1.0.0", f.id());
        assertEquals(3, f.bundles().size());
        assertEquals(1, f.bundles().get(0).startOrder());
        assertEquals(Feature.DEFAULT_START_ORDER, f.bundles().get(1).startOrder());
        assertEquals("d", f.bundles().get(2).artifactId());
        assertEquals(Map.of("my.pid", Map.of("k", "v")), f.configurations());
    }

    @Test
    void acceptsStringStartOrdersAndTreatsNullAsAbsent() throws Exception {
        Feature f = Feature.parse("x", """
                {"feature-resource-version": null, "id": "a:f:1", "description": null,
                 "bundles": [{"id": "a:b:1", "start-order": "7"}, {"id": "a:c:1", "start-order": null}],
                 "configurations": null}
                """);
        assertEquals(7, f.bundles().get(0).startOrder());
        assertEquals(Feature.DEFAULT_START_ORDER, f.bundles().get(1).startOrder());
        assertEquals("", f.description());
        assertEquals(Map.of(), f.configurations());
        assertEquals(List.of(), Feature.parse("x", "{\"id\": \"a:f:1\", \"bundles\": null}").bundles());
        assertEquals(Integer.MAX_VALUE, Feature.parse("x",
                "{\"id\": \"a:f:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 2147483647}]}")
                .bundles().get(0).startOrder());
    }

    @Test
    void rejectsBadDescriptors() {
        assertRejected("not a JSON object", "[]");
        assertRejected("not a JSON object", "\"a:b:1\"");
        assertRejected("empty: no JSON value", "  ");
        assertRejected("\"id\" (a string) is required", "{\"bundles\": []}");
        assertRejected("\"id\" (a string) is required", "{\"id\": 1}");
        assertRejected("\"id\" (a string) is required", "{\"id\": \" \"}");
        assertRejected("unsupported feature-resource-version 2.0 (expected 1.x)",
                "{\"feature-resource-version\": \"2.0\", \"id\": \"a:b:1\"}");
        assertRejected("unsupported feature-resource-version 1.0 (expected 1.x)",
                "{\"feature-resource-version\": 1.0, \"id\": \"a:b:1\"}");
        assertRejected("\"bundles\" must be an array", "{\"id\": \"a:b:1\", \"bundles\": {}}");
        assertRejected("a bundle entry must be a string or an object", "{\"id\": \"a:b:1\", \"bundles\": [1]}");
        assertRejected("bad bundle id \"a:b\": expected groupId:artifactId[:type[:classifier]]:version",
                "{\"id\": \"a:b:1\", \"bundles\": [\"a:b\"]}");
        assertRejected("bad bundle id \"a::1\": empty part", "{\"id\": \"a:b:1\", \"bundles\": [\"a::1\"]}");
        assertRejected("bad start-order 0 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 0}]}");
        assertRejected("bad start-order -3 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": -3}]}");
        assertRejected("bad start-order 1.5 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 1.5}]}");
        assertRejected("bad start-order 2147483648 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 2147483648}]}");
        assertRejected("bad start-order 99999999999999999999 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 99999999999999999999}]}");
        assertRejected("bad start-order 01 for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": \"01\"}]}");
        assertRejected("bad start-order true for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": true}]}");
        assertRejected("bad start-order [1] for a:b:1",
                "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": [1]}]}");
        assertRejected("a bundle entry has no \"id\" string", "{\"id\": \"a:b:1\", \"bundles\": [{}]}");
        assertRejected("a bundle entry has no \"id\" string", "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": 3}]}");
    }

    @Test
    void rejectsMalformedJson() {
        // Strict RFC 8259, plus no duplicate keys and nothing after the value.
        for (String bad : List.of("{", "{\"id\": \"a:b:1\",}", "{id: \"a:b:1\"}", "{'id': 'a:b:1'}",
                "{\"id\": \"a:b:1\"} x", "{\"id\": \"a:b:1\"} {}", "{\"id\": \"a:b:1\", \"id\": \"a:c:1\"}",
                "{\"id\": \"a\nb\"}", "{\"id\": \"a:b:1\" /* c */}", "{\"id\": \"a:b:1\", \"bundles\": [1,]}",
                "{\"id\": \"a:b:1\", \"x\": 01}", "{\"id\": \"a:b:1\", \"x\": 1.}", "{\"id\": \"a:b:1\", \"x\": tru}",
                "{\"id\": \"a:b:1\", \"x\": NaN}", "[".repeat(5000) + "]".repeat(5000))) {
            assertThrows(JsonProcessingException.class, () -> Feature.parse("x", bad), bad);
        }
    }

    @Test
    void readSaysWhichFileAndWhere(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("broken.json");
        Files.writeString(bad, "{\n  \"id\": \"a:b:1\",\n  \"bundles\": [\"a:c:1\" \"a:d:1\"]\n}\n");
        IOException e = assertThrows(IOException.class, () -> Feature.read(bad));
        assertTrue(e.getMessage().startsWith("feature " + bad + ": "), e.getMessage());
        assertTrue(e.getMessage().endsWith(" at line 3, column 23"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());

        Path dup = dir.resolve("dup.json");
        Files.writeString(dup, "{\"id\": \"a:b:1\", \"id\": \"a:c:1\"}");
        e = assertThrows(IOException.class, () -> Feature.read(dup));
        assertTrue(e.getMessage().contains("Duplicate field 'id'"), e.getMessage());

        Path wrong = dir.resolve("wrong.json");
        Files.writeString(wrong, "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 0}]}");
        e = assertThrows(IOException.class, () -> Feature.read(wrong));
        assertEquals("feature " + wrong + ": bad start-order 0 for a:b:1", e.getMessage());

        Path good = dir.resolve("good.json");
        Files.writeString(good, "{\"id\": \"a:b:1\", \"description\": \"h\u00e9llo \\u00e9\", \"bundles\": [\"a:c:1\"]}");
        Feature f = Feature.read(good);
        assertEquals("good", f.name());
        assertEquals("h\u00e9llo \u00e9", f.description());
        assertEquals("a:c:1", f.bundles().get(0).id());
    }

    private static void assertRejected(String message, String json) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", json), json);
        assertEquals(message, e.getMessage(), json);
    }

    @Test
    void disablingRemovesOnlyTheBundlesNoOtherEnabledFeatureNames() throws Exception {
        Feature backend = feature("backend", "g:shared:1", "g:backend:1", "g:helper:1");
        Feature other = feature("other", "g:shared:1", "g:other:1");
        Feature helperToo = feature("helper-too", "g:helper:1");
        assertEquals(List.of("g:backend:1", "g:helper:1"), ids(backend.bundlesNotNamedBy(List.of(backend, other))));
        assertEquals(List.of("g:backend:1"), ids(backend.bundlesNotNamedBy(List.of(other, helperToo))));
        assertEquals(List.of("g:shared:1", "g:backend:1", "g:helper:1"), ids(backend.bundlesNotNamedBy(List.of())));
    }

    private static Feature feature(String name, String... bundles) throws Exception {
        StringBuilder json = new StringBuilder("{\"id\": \"g:" + name + ":1\", \"bundles\": [");
        for (int i = 0; i < bundles.length; i++) {
            json.append(i == 0 ? "" : ",").append('"').append(bundles[i]).append('"');
        }
        return Feature.parse(name, json.append("]}").toString());
    }

    private static List<String> ids(List<Feature.FeatureBundle> bundles) {
        return bundles.stream().map(Feature.FeatureBundle::id).toList();
    }

    @Test
    void readsConfigurationsWithTypedValues() throws Exception {
        Feature f = Feature.parse("procbox", """
                {"id": "a:procbox:1", "configurations": {"io.vivarium.backend.procbox": {
                  "bwrap_path": "/opt/bwrap", "default_pids_limit": 64, "ratio": 0.5, "on": true,
                  "paths": ["/a", "/b"]}}}
                """);
        Map<String, Object> c = f.configurations().get("io.vivarium.backend.procbox");
        assertEquals("/opt/bwrap", c.get("bwrap_path"));
        assertEquals(64L, c.get("default_pids_limit"));
        assertEquals(0.5, c.get("ratio"));
        assertEquals(true, c.get("on"));
        assertEquals(List.of("/a", "/b"), List.of((String[]) c.get("paths")));
    }

    @Test
    void refusesConfigurationsItCannotApplyAsWritten() {
        for (String bad : List.of("[]", "{\"p\": 1}", "{\"f~name\": {}}", "{\"p\": {\"k:Integer\": 1}}",
                "{\"p\": {\"k\": {\"nested\": 1}}}", "{\"p\": {\"k\": [1]}}", "{\"p\": {\"k\": null}}")) {
            String json = "{\"id\": \"a:f:1\", \"configurations\": " + bad + "}";
            assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", json), json);
        }
    }
}
