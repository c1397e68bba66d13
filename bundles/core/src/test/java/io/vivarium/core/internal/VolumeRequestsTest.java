package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.VolumeMount;

class VolumeRequestsTest {
    private static final List<String> CAN = List.of(Capability.EXEC, Capability.VOLUMES);

    private static ApiException refused(List<VolumeMount> volumes, List<String> caps) {
        ApiException e = assertThrows(ApiException.class, () -> VolumeRequests.check(volumes, "box", caps));
        assertEquals(400, e.status(), e.getMessage());
        return e;
    }

    private static ApiException refused(VolumeMount... volumes) {
        return refused(List.of(volumes), CAN);
    }

    @Test
    void plainMountsPass() {
        assertDoesNotThrow(() -> VolumeRequests.check(List.of(new VolumeMount("data", "/data", "proj/a-1", false),
                new VolumeMount("ref", "/work/ref", null, true), new VolumeMount("more", "/datum", null, true)), "box", CAN));
        assertDoesNotThrow(() -> VolumeRequests.check(List.of(), "box", List.of()), "no volumes: any backend");
    }

    @Test
    void aBackendWithoutTheCapabilityIsNamed() {
        ApiException e = refused(List.of(new VolumeMount("data", "/data", null, false)), List.of(Capability.EXEC));
        assertTrue(e.getMessage().contains("box") && e.getMessage().contains(Capability.VOLUMES), e.getMessage());
    }

    @Test
    void pathsThatEscapeOrHideTheSystemAreRefused() {
        for (String path : List.of("", "/", "data", "/a/../b", "/a/./b", "/data/", "//data", "/a b", "/etc", "/etc/app",
                "/usr/local/x", "/proc", "/var/run/x", "/dev/shm", "/a\nb")) {
            refused(new VolumeMount("data", path, null, false));
        }
        assertDoesNotThrow(() -> VolumeRequests.check(List.of(new VolumeMount("data", "/etcetera", null, false),
                new VolumeMount("b", "/var/lib/b", null, false)), "box", CAN), "only the system directories themselves");
        for (String sub : List.of("/abs", "..", "../up", "a/../../b", "a//b", "a/", ".", "a b")) {
            refused(new VolumeMount("data", "/data", sub, false));
        }
    }

    @Test
    void namesAreTheirsOnceAndMountsSideBySide() {
        refused(new VolumeMount("Data", "/data", null, false));
        refused(new VolumeMount(null, "/data", null, false));
        refused(new VolumeMount("data", "/a", null, true), new VolumeMount("data", "/b", null, true));
        ApiException nested = refused(new VolumeMount("a", "/data", null, true), new VolumeMount("b", "/data/in", null, true));
        assertTrue(nested.getMessage().contains("/data/in"), nested.getMessage());
        refused(new VolumeMount("a", "/data", null, true), new VolumeMount("b", "/data", null, true));
        refused(Collections.nCopies(VolumeRequests.MAX_VOLUMES + 1, new VolumeMount("a", "/a", null, true)), CAN);
    }
}
