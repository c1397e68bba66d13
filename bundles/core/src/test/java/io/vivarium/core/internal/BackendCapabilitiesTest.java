package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.Caller;
import io.vivarium.api.Capability;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.Role;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.FakeBackend;
import io.vivarium.testkit.FakeCheckpoints;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code GET /v1/backends} says a backend can do: reported where only it knows, derived from what it implements. */
class BackendCapabilitiesTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path state;

    private final FakeBackend backend = new FakeBackend();

    private WholeCore started() throws Exception {
        WholeCore m = new WholeCore();
        m.bindStateStores(new FileStores(), java.util.Map.of());
        m.start(state, "", Duration.ZERO);
        return m;
    }

    private static BackendInfo info(WholeCore m) {
        return m.backends().stream().filter(b -> b.name().equals("fake")).findFirst().orElseThrow();
    }

    @Test
    void aBackendAloneHasWhatItReportsAndNothingItOnlyClaims() throws Exception {
        backend.capabilities = Set.of(Capability.EXEC, Capability.EVAL, Capability.FORK, Capability.PAUSE, "Bad Name",
                "vendor_gpu");
        WholeCore m = started();
        m.backendArrived(new BackendRegistry.Entry("fake", backend, "b", "1", 1));
        BackendInfo info = info(m);
        assertEquals(List.of(Capability.EVAL, Capability.EXEC, "vendor_gpu"), info.capabilities(),
                "derived names it reports are not believed; a vendor's own name is kept");
        assertFalse(info.machine());
        String id = m.create(ALICE, null).id();
        assertEquals(501, assertThrows(ApiException.class, () -> m.pause(ALICE, id)).status(),
                "what it claimed without implementing answers 501, as its listing said");
    }

    @Test
    void theSeamsItsBundleRegistersAreWhatItCanDo() throws Exception {
        FakeCheckpoints vm = new FakeCheckpoints();
        backend.checkpoints = vm;
        backend.machine = true;
        WholeCore m = started();
        m.seamArrived("fake", 1, 11, vm.checkpoints());
        m.seamArrived("fake", 1, 12, vm.power());
        m.seamArrived("fake", 1, 13, backend.pauseControl());
        m.seamArrived("fake", 1, 14, new ImagingBackend(backend));
        m.backendArrived(new BackendRegistry.Entry("fake", backend, "b", "1", 1));

        BackendInfo info = info(m);
        assertTrue(info.machine());
        assertEquals(List.of(Capability.BRANCH, Capability.CHECKPOINTS, Capability.DRY_RUN, Capability.EXEC,
                Capability.FORK, Capability.MEMORY_LIMIT, Capability.PAUSE, Capability.SNAPSHOT, Capability.STOP_START,
                Capability.VCPUS), info.capabilities());

        m.seamLeft(13);
        assertFalse(info(m).can(Capability.PAUSE), "a seam that leaves takes its capability with it");
    }

    @Test
    void aSeamAnotherBundleRegistersUnderItsNameLendsItNothing() throws Exception {
        WholeCore m = started();
        m.seamArrived("fake", 99, 11, backend.pauseControl());
        m.backendArrived(new BackendRegistry.Entry("fake", backend, "b", "1", 1));
        assertFalse(info(m).can(Capability.PAUSE));
        String id = m.create(ALICE, null).id();
        assertEquals(501, assertThrows(ApiException.class, () -> m.pause(ALICE, id)).status());
    }

    @Test
    void aBackendWhoseArtifactsNoInstalledStrategyStoresIsUnavailableAndSaysWhich() throws Exception {
        DiskBackend disks = new DiskBackend(backend);
        WholeCore m = started();
        m.backendArrived(new BackendRegistry.Entry("fake", disks, "b", "1", 1));
        BackendInfo info = info(m);
        assertFalse(info.available());
        assertTrue(info.reason().contains("no storage strategy for its disk artifacts"), info.reason());
        ApiException e = assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest("fake", null)));
        assertEquals(503, e.status());
        assertTrue(backend.creates.isEmpty(), "refused before the backend was asked");

        m.storageArrived(5, new ImagingBackend.CopyStrategy(ArtifactKind.DISK));
        assertTrue(info(m).available());
        m.create(ALICE, new CreateSandboxRequest("fake", null));
        assertEquals(1, backend.creates.size(), "the backend chose from the strategies core handed it");
    }

    /** A backend whose create stores a disk through the strategies it is handed. */
    private static final class DiskBackend extends ImagingBackend {
        DiskBackend(FakeBackend fake) {
            super(fake);
        }

        @Override
        public Set<ArtifactKind> storedKinds() {
            return Set.of(ArtifactKind.DISK);
        }

        @Override
        public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
            storage.choose(ArtifactKind.DISK, spec.dir());
            return super.create(spec, storage, context);
        }
    }
}
