package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which runsc builds checkpoint a container in place, and which misread a network namespace, by the date their version line names. */
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

    @Test
    void buildsBeforeTheNamespaceCheckWasFixedAndThoseWithoutADateAreStartedInTheWrapper() {
        assertTrue(Runsc.misreadsNamespaces("runsc version 0.0~20240729.0"), "Debian 13's: gvisor#10704");
        assertTrue(Runsc.misreadsNamespaces("runsc version VERSION_MISSING"));
        assertFalse(Runsc.misreadsNamespaces("runsc version release-20240801.0"));
        assertFalse(Runsc.misreadsNamespaces("runsc version release-20251110.0"));
    }
}
