package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.common.features.Feature;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FeatureCatalogTest {
    @TempDir
    Path dist;

    @Test
    void listsFeatureFilesAndNamesTheirJarsInSystem() throws Exception {
        Path features = Files.createDirectories(dist.resolve("features"));
        Path system = dist.resolve("system");
        Files.writeString(features.resolve("b.json"), "{\"id\": \"g:b:1\", \"description\": \"B\", \"bundles\": [\"org.example:thing:1.0\"]}");
        Files.writeString(features.resolve("a.json"), "{\"id\": \"g:a:1\", \"bundles\": []}");
        Files.writeString(features.resolve("notes.txt"), "not a feature");
        Path jar = system.resolve("org/example/thing/1.0/thing-1.0.jar");
        Files.createDirectories(jar.getParent());
        Files.write(jar, TestJars.bundle("org.example.thing", "1.0.0"));

        FeatureCatalog catalog = new FeatureCatalog(features, system);
        assertEquals(List.of("a", "b"), catalog.all().stream().map(Feature::name).toList());
        Feature b = catalog.find("b").orElseThrow();
        assertEquals("B", b.description());
        assertEquals("org.example.thing", catalog.symbolicName(b.bundles().get(0)));
        assertEquals(jar.toUri().toString(), catalog.location(b.bundles().get(0)));
        assertTrue(catalog.find("missing").isEmpty());
        assertTrue(catalog.find("../features/b").isEmpty(), "a name is never a path");
    }

    @Test
    void aBrokenFeatureFileIsReportedWithItsPath() throws Exception {
        Path features = Files.createDirectories(dist.resolve("features"));
        Files.writeString(features.resolve("bad.json"), "{\"bundles\": [");
        ApiException e = assertThrows(ApiException.class, () -> new FeatureCatalog(features, dist).all());
        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("bad.json"), e.getMessage());
    }

    @Test
    void withoutTheLaunchersFoldersThereAreNoFeatures() {
        FeatureCatalog catalog = new FeatureCatalog(null, null);
        assertEquals(List.of(), catalog.all());
        assertTrue(catalog.find("core").isEmpty());
    }
}
