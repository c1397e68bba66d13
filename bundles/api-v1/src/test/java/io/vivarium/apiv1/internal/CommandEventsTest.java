package io.vivarium.apiv1.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;

/** Where a stream of a command's events resumes. */
class CommandEventsTest {

    @Test
    void lastEventIdWinsOverFromAndNeitherMeansTheStart() {
        assertEquals(0, CommandEvents.resumeAt(null, null));
        assertEquals(12, CommandEvents.resumeAt(null, "12"));
        assertEquals(40, CommandEvents.resumeAt(" 40 ", "12"), "a reconnecting client's Last-Event-ID");
    }

    @Test
    void anythingButAnOffsetIsA400() {
        for (String bad : new String[] {"x", "-1", "1.5", ""}) {
            assertEquals(400, assertThrows(ApiException.class, () -> CommandEvents.resumeAt(bad, null)).status(), bad);
        }
    }
}
