package io.vivarium.common.features;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EnabledFeaturesTest {
    @TempDir
    Path state;

    @Test
    void startsFromTheLaunchersListAndSavesEveryChangeForTheNextStart() throws Exception {
        EnabledFeatures enabled = new EnabledFeatures(state, List.of("core", "api-v1", "procbox"));
        assertEquals(Optional.empty(), EnabledFeatures.saved(state), "nothing is written until something changes");
        assertTrue(enabled.remove("procbox"));
        assertEquals("{\"features\":[\"core\",\"api-v1\"]}", Files.readString(enabled.file()));
        assertTrue(enabled.add("fingerprint-stat"));
        assertFalse(enabled.add("fingerprint-stat"));
        assertEquals(List.of("core", "api-v1", "fingerprint-stat"), enabled.names());
        assertEquals(Optional.of(List.of("core", "api-v1", "fingerprint-stat")), EnabledFeatures.saved(state));
        try (var s = Files.list(state)) {
            assertEquals(List.of(enabled.file()), s.toList(), "no temporary file is left behind");
        }
    }

    @Test
    void aBadSavedFileSaysHowToGetOut() throws Exception {
        for (String bad : List.of("{\"features\":[\"core\",", "[]", "{\"features\":[]}", "{\"features\":[\"../x\"]}",
                "{\"features\":[7]}")) {
            Files.writeString(state.resolve(EnabledFeatures.FILE), bad);
            IOException e = assertThrows(IOException.class, () -> EnabledFeatures.saved(state), bad);
            assertTrue(e.getMessage().contains("start with --features"), e.getMessage());
        }
    }
}
