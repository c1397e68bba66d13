package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EnabledFeaturesTest {
    @TempDir
    Path state;

    @Test
    void startsFromTheLaunchersListAndSavesEveryChange() throws Exception {
        Path file = state.resolve("features.json");
        EnabledFeatures enabled = new EnabledFeatures(file, List.of("core", "api-v1", "procbox"));
        assertFalse(Files.exists(file), "nothing is written until something changes");
        enabled.remove("procbox");
        assertEquals("{\"features\":[\"core\",\"api-v1\"]}", Files.readString(file));
        enabled.add("fingerprint-stat");
        enabled.add("fingerprint-stat");
        assertEquals(List.of("core", "api-v1", "fingerprint-stat"), enabled.names());
        assertEquals("{\"features\":[\"core\",\"api-v1\",\"fingerprint-stat\"]}", Files.readString(file));
        try (var s = Files.list(state)) {
            assertEquals(List.of(file), s.toList(), "no temporary file is left behind");
        }
    }
}
