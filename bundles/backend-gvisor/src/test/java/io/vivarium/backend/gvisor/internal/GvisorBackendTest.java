package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.FakeBackend;
import io.vivarium.testkit.FixedStorage;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the backend says of itself without runsc: what it reports, and what it does where runsc is missing. */
class GvisorBackendTest {

    @TempDir
    Path tmp;

    private Revision withoutRunsc() {
        return Revision.of(new GvisorSettings(tmp.resolve("no-runsc"), Optional.empty(), 65534, 65534,
                Duration.ofSeconds(30), tmp.resolve("agent-bin"), tmp.resolve("links")));
    }

    @Test
    void itReportsExecEvalTheMemoryLimitVolumesRootImagesAndEgressWhereTheHostGivesItAndNothingCoreDerives() {
        try (Revision revision = withoutRunsc()) {
            Set<String> reported = revision.backend().capabilities();
            Set<String> expected = new java.util.HashSet<>(Set.of(Capability.EXEC, Capability.EVAL, Capability.MEMORY_LIMIT,
                    Capability.VOLUMES, Capability.ROOT_IMAGE));
            assertFalse(reported.contains(Capability.NETWORK_EGRESS), "no egress without a runsc that was tried with it");
            assertEquals(expected, reported);
            assertTrue(Capability.REPORTED.containsAll(reported), "only names a backend reports: " + reported);
            assertFalse(revision.backend().machine(), "a container is not a machine");
            assertEquals(GvisorBackend.NAME, revision.backend().name());
        }
    }

    @Test
    void withoutRunscItIsUnavailableAndACreateIsA503ThatMakesNothing() {
        try (Revision revision = withoutRunsc()) {
            Availability availability = revision.backend().availability();
            assertFalse(availability.available());
            assertTrue(availability.reason().contains("apt-get install runsc"), availability.reason());
            assertTrue(revision.backend().details().containsKey("images"), "details are there all the same");

            ApiException e = assertThrows(ApiException.class,
                    () -> revision.create(new InstanceSpec("x", tmp.resolve("x"), null)));
            assertEquals(503, e.status());
            assertEquals(availability.reason(), e.getMessage());
            assertFalse(Files.exists(tmp.resolve("x")), "nothing was made");
        }
    }

    @Test
    void theSeamsRefuseAnotherBackendsInstance() {
        try (Revision revision = withoutRunsc()) {
            FakeBackend fake = new FakeBackend();
            SandboxInstance other = fake.create(new InstanceSpec("other", tmp.resolve("other"), null),
                    FixedStorage.of(), GvisorHost.operation());
            assertThrows(IllegalArgumentException.class, () -> revision.pause().pause(other));
            assertThrows(IllegalArgumentException.class, () -> revision.checkpoints().list(other));
            assertThrows(IllegalArgumentException.class, () -> revision.images().capture(other, tmp.resolve("image"),
                    FixedStorage.of(), GvisorHost.operation()));
        }
    }
}
