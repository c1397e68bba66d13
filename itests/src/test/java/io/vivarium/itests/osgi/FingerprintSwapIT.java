package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxService;

import org.junit.Assume;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleException;

/**
 * Fingerprint modes are bundles: with sha256 stopped, new baselines fall back to stat, and a change
 * set against an older sha256 baseline is refused with 409 instead of comparing unlike listings.
 */
@RunWith(PaxExam.class)
public class FingerprintSwapIT extends VivariumOsgiTestSupport {
    private static final Caller ADMIN = new Caller("default", Role.ADMIN);

    @Test
    public void removingSha256FallsBackToStatAndRefusesToCompareAcrossModes() throws BundleException {
        Assume.assumeTrue("needs bubblewrap and root", java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/bin/bwrap"))
                && "root".equals(System.getProperty("user.name")));
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        awaitService(io.vivarium.api.spi.FingerprintMode.class, "(vivarium.fingerprint=sha256)");
        String id = sandboxes.create(ADMIN, null).id();
        Bundle sha256 = bundle("io.vivarium.fingerprint-sha256");
        try {
            assertEquals("sha256", sandboxes.baseline(ADMIN, id, new BaselineRequest(List.of("/work"))).mode());
            sha256.stop();
            try {
                sandboxes.changes(ADMIN, id, null);
                fail("comparing a sha256 baseline with a stat listing must be refused");
            } catch (ApiException e) {
                assertEquals(409, e.status());
                assertTrue(e.getMessage(), e.getMessage().contains("take a new baseline"));
            }
            assertEquals("stat", sandboxes.baseline(ADMIN, id, new BaselineRequest(List.of("/work"))).mode());
            ChangeSet none = sandboxes.changes(ADMIN, id, null);
            assertEquals("stat", none.mode());
        } finally {
            sha256.start();
            sandboxes.delete(ADMIN, id);
        }
        Http backends = get("/v1/backends", true);
        assertEquals(200, backends.status());
    }
}
