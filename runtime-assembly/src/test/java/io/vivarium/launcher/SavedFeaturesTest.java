package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SavedFeaturesTest {
    @TempDir
    Path state;

    @Test
    void givenBeatsSavedBeatsDefaults() throws Exception {
        assertEquals(Options.DEFAULT_FEATURES, SavedFeatures.choose(null, state));
        Files.writeString(state.resolve("features.json"), "{\"features\":[\"core\",\"api-v1\"]}");
        assertEquals(List.of("core", "api-v1"), SavedFeatures.choose(null, state));
        assertEquals(List.of("core"), SavedFeatures.choose(List.of("core"), state));
    }

    @Test
    void aBadSavedFileSaysHowToGetOut() throws Exception {
        for (String bad : List.of("{\"features\":[\"core\",", "[]", "{\"features\":[]}", "{\"features\":[\"../x\"]}",
                "{\"features\":[7]}")) {
            Files.writeString(state.resolve("features.json"), bad);
            IOException e = assertThrows(IOException.class, () -> SavedFeatures.choose(null, state), bad);
            assertTrue(e.getMessage().contains("start with --features"), e.getMessage());
        }
    }
}
