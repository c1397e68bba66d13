package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

class OverlayMountTest {

    @Test
    void refusesPathsThatTheOptionStringWouldSplitOrEscape() {
        for (String path : new String[] {"/var/a,b/work", "/var/a:b/work", "/var/a\\b/work"}) {
            IOException e = assertThrows(IOException.class, () -> OverlayMount.optionValue(Path.of(path)));
            assertTrue(e.getMessage().startsWith("cannot mount an overlay on " + path), e.getMessage());
        }
    }

    @Test
    void takesOtherPathsAsTheyAre() throws IOException {
        assertEquals("/var/lib/vivarium/sandboxes/a b-1/work",
                OverlayMount.optionValue(Path.of("/var/lib/vivarium/sandboxes/a b-1/work")));
    }
}
