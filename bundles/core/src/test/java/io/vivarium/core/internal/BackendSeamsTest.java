package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

/** The seams table: found by backend name and bundle; a seam whose service is gone is neither found nor kept. */
class BackendSeamsTest {
    private final BackendSeams seams = new BackendSeams();

    @Test
    void aSeamIsFoundUnderItsBackendNameFromItsOwnBundleNewestFirst() {
        seams.add("b", 7, 10, "old", () -> true);
        seams.add("b", 7, 11, "new", () -> true);
        seams.add("b", 8, 12, "foreign", () -> true);
        assertEquals(Optional.of("new"), seams.find("b", 7, String.class));
        assertEquals(Optional.of("foreign"), seams.find("b", 8, String.class));
        assertEquals(Optional.empty(), seams.find("other", 7, String.class));
        seams.remove(11);
        assertEquals(Optional.of("old"), seams.find("b", 7, String.class));
    }

    @Test
    void aSeamWhoseBindCameAfterItsServiceWasGoneIsDroppedNotKept() {
        AtomicBoolean registered = new AtomicBoolean(true);
        seams.add("b", 7, 10, "stale", registered::get);
        registered.set(false); // unregistered, and its unbind reached core before its bind did
        seams.remove(10);
        seams.add("b", 7, 10, "stale", registered::get); // the late bind
        assertTrue(seams.find("b", 7, String.class).isEmpty(), "a late bind of a gone service is not kept");

        AtomicBoolean next = new AtomicBoolean(true);
        seams.add("b", 7, 20, "live", next::get);
        next.set(false); // gone without an unbind at all
        assertTrue(seams.find("b", 7, String.class).isEmpty(), "nor a seam whose service went away unseen");
    }
}
