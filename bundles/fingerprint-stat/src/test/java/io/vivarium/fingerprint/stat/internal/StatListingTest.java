package io.vivarium.fingerprint.stat.internal;

import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.testkit.fingerprint.GuestListingContract;

/** The guest listing conformance suite, run against {@link StatMode}. */
class StatListingTest extends GuestListingContract {
    @Override
    protected FingerprintMode newMode() {
        return new StatMode();
    }

    @Override
    protected String perFileTool() {
        return "stat";
    }

    @Override
    protected String toolFailureMessage() {
        return "cannot stat";
    }
}
