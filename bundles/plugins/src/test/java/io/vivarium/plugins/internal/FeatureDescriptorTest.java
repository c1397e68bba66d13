package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import io.vivarium.plugins.internal.FeatureDescriptor.FeatureBundle;

import org.junit.jupiter.api.Test;

class FeatureDescriptorTest {

    @Test
    void readsDescriptionBundlesAndStartOrders() throws Exception {
        FeatureDescriptor f = FeatureDescriptor.parse("procbox", """
                {
                  "feature-resource-version": "1.0",
                  "id": "io.vivarium.features:procbox:0.1.0",
                  "description": "Process sandboxes.",
                  "bundles": [
                    { "id": "io.vivarium:backend-procbox:0.1.0", "start-order": 3 },
                    { "id": "org.example:lib:zip:linux:2.0" },
                    "org.example:plain:1.0"
                  ],
                  "configurations": {}
                }""");
        assertEquals("procbox", f.name());
        assertEquals("Process sandboxes.", f.description());
        assertEquals(List.of(
                new FeatureBundle("io.vivarium:backend-procbox:0.1.0", "io/vivarium/backend-procbox/0.1.0/backend-procbox-0.1.0.jar", 3),
                new FeatureBundle("org.example:lib:zip:linux:2.0", "org/example/lib/2.0/lib-2.0-linux.zip", 2),
                new FeatureBundle("org.example:plain:1.0", "org/example/plain/1.0/plain-1.0.jar", 2)), f.bundles());
    }

    @Test
    void refusesWhatIsNotAFeature() {
        assertThrows(IllegalArgumentException.class, () -> FeatureDescriptor.parse("x", "[]"));
        assertThrows(IllegalArgumentException.class, () -> FeatureDescriptor.parse("x", "{\"bundles\": [{}]}"));
        assertThrows(IllegalArgumentException.class, () -> FeatureDescriptor.parse("x", "{\"bundles\": [\"a:b\"]}"));
        assertThrows(IllegalArgumentException.class, () -> FeatureDescriptor.parse("x", "{\"bundles\": [\"a::1\"]}"));
    }

    @Test
    void disablingRemovesOnlyTheBundlesNoOtherEnabledFeatureNames() throws Exception {
        FeatureDescriptor backend = feature("backend", "g:shared:1", "g:backend:1", "g:helper:1");
        FeatureDescriptor other = feature("other", "g:shared:1", "g:other:1");
        FeatureDescriptor helperToo = feature("helper-too", "g:helper:1");
        assertEquals(List.of("g:backend:1", "g:helper:1"), ids(backend.bundlesNotNamedBy(List.of(backend, other))));
        assertEquals(List.of("g:backend:1"), ids(backend.bundlesNotNamedBy(List.of(other, helperToo))));
        assertEquals(List.of("g:shared:1", "g:backend:1", "g:helper:1"), ids(backend.bundlesNotNamedBy(List.of())));
    }

    private static FeatureDescriptor feature(String name, String... bundles) throws Exception {
        StringBuilder json = new StringBuilder("{\"bundles\": [");
        for (int i = 0; i < bundles.length; i++) {
            json.append(i == 0 ? "" : ",").append('"').append(bundles[i]).append('"');
        }
        return FeatureDescriptor.parse(name, json.append("]}").toString());
    }

    private static List<String> ids(List<FeatureBundle> bundles) {
        return bundles.stream().map(FeatureBundle::id).toList();
    }
}
