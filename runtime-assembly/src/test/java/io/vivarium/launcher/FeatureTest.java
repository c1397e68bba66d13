package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

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
        assertEquals(1, f.configurationCount());
    }

    @Test
    void rejectsBadDescriptors() {
        assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", "[]"));
        assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", "{\"bundles\": []}"));
        assertThrows(IllegalArgumentException.class,
                () -> Feature.parse("x", "{\"feature-resource-version\": \"2.0\", \"id\": \"a:b:1\"}"));
        assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", "{\"id\": \"a:b:1\", \"bundles\": [\"a:b\"]}"));
        assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", "{\"id\": \"a:b:1\", \"bundles\": [\"a::1\"]}"));
        assertThrows(IllegalArgumentException.class,
                () -> Feature.parse("x", "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 0}]}"));
        assertThrows(IllegalArgumentException.class,
                () -> Feature.parse("x", "{\"id\": \"a:b:1\", \"bundles\": [{\"id\": \"a:b:1\", \"start-order\": 1.5}]}"));
        assertThrows(IllegalArgumentException.class, () -> Feature.parse("x", "{\"id\": \"a:b:1\", \"bundles\": [{}]}"));
    }
}
