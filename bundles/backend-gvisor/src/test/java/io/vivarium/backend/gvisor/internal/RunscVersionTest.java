package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which runsc builds checkpoint a container in place, by the date their version line names. */
class RunscVersionTest {

    @Test
    void debianThirteensBuildAndLaterReleasesCheckpointInPlace() {
        assertTrue(Runsc.checkpointsInPlace("runsc version 0.0~20240729.0"));
        assertTrue(Runsc.checkpointsInPlace("runsc version release-20251110.0"));
    }

    @Test
    void debianTwelvesBuildAndVersionsWithoutADateDoNot() {
        assertFalse(Runsc.checkpointsInPlace("runsc version 0.0~20221219.0"));
        assertFalse(Runsc.checkpointsInPlace("runsc version VERSION_MISSING"));
        assertFalse(Runsc.checkpointsInPlace(""));
        assertFalse(Runsc.checkpointsInPlace(null));
    }
}
