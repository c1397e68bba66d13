package io.vivarium.fingerprint.sha256.internal;

import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.testkit.fingerprint.GuestListingContract;

/** The guest listing conformance suite, run against {@link Sha256Mode}. */
class Sha256ListingTest extends GuestListingContract {
    @Override
    protected FingerprintMode newMode() {
        return new Sha256Mode();
    }

    @Override
    protected String perFileTool() {
        return "sha256sum";
    }

    @Override
    protected String toolFailureMessage() {
        return "cannot hash";
    }
}
