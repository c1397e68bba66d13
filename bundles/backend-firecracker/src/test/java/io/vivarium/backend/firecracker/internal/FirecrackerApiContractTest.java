package io.vivarium.backend.firecracker.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MemoryBackend;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotCreate;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotLoad;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.VsockOverride;
import io.vivarium.kit.vmm.VmmApiException;
import io.vivarium.testkit.vmm.FakeVmm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FirecrackerApi} against the published document it targets, through {@link
 * FakeFirecracker}: what it sends is valid by the document, is what the golden fixtures of that
 * version hold, and keeps the rules Firecracker enforces beyond the document.
 */
class FirecrackerApiContractTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private FakeVmm vmm;
    private FirecrackerApi api;

    @BeforeEach
    void startAProcess() throws Exception {
        vmm = fake("api.sock");
        api = new FirecrackerApi(dir.resolve("api.sock"), Duration.ofSeconds(5));
    }

    @AfterEach
    void stop() throws Exception {
        api.close();
        vmm.close();
    }

    @Test
    void aBootSendsWhatTheFixtureOfItsVersionHolds() throws Exception {
        boot();
        assertEquals(fixture("boot"), vmm.receivedAsFixture());
        assertEquals("Running", api.describe().state());
        assertEquals(FirecrackerApi.TARGET, api.version());
    }

    @Test
    void aSnapshotIsOfAPausedMicroVmAndLoadsIntoAFreshProcessWithItsOwnVsockSocket() throws Exception {
        boot();
        int booted = vmm.received().size();
        api.pause();
        api.createSnapshot(SnapshotCreate.full(path("vm.state"), path("vm.mem")));
        api.createSnapshot(SnapshotCreate.diff(path("vm-diff.state"), path("vm-diff.mem")));
        api.resume();
        assertEquals(fixture("snapshot"), vmm.receivedAsFixture().subList(booted, vmm.received().size()));

        try (FakeVmm fresh = fake("api-2.sock");
                FirecrackerApi relaunched = new FirecrackerApi(dir.resolve("api-2.sock"), Duration.ofSeconds(5))) {
            relaunched.loadSnapshot(load(path("agent-2.vsock")));
            assertEquals(fixture("load"), fresh.receivedAsFixture());
            assertEquals("Running", relaunched.describe().state());
        }
    }

    @Test
    void everyFixtureFollowsThePinnedDocumentOfItsVersion() throws Exception {
        assertEquals(FirecrackerApi.TARGET, FirecrackerRules.DOCUMENT.version(),
                "the document pinned is of the version the client targets");
        for (String scenario : List.of("boot", "snapshot", "load")) {
            for (JsonNode request : fixture(scenario)) {
                assertEquals("", FirecrackerRules.DOCUMENT.violations(request.get("method").asText(),
                        request.get("path").asText(), JSON.writeValueAsString(request.get("body"))), scenario + ": " + request);
            }
        }
    }

    @Test
    void aFieldOfAnotherVersionIsRefused() {
        // the seed's bug: a load body naming the vsock's new socket as an older client did
        ObjectNode old = JSON.createObjectNode().put("snapshot_path", "/s").put("mem_file_path", "/m").put("uds_path", "/v");
        assertFalse(FirecrackerRules.DOCUMENT.violations("PUT", "/snapshot/load", old.toString()).isEmpty());
        assertFalse(FirecrackerRules.DOCUMENT.violations("PUT", "/vsock", "{\"guest_cid\": 2, \"uds_path\": \"/v\"}")
                .isEmpty(), "and a value out of the document's range (cid 2 is the host's)");
    }

    @Test
    void whatFirecrackerRefusesBeyondItsDocumentComesBackAsItsFaultMessage() throws Exception {
        assertThrows(VmmApiException.class, api::pause, "a microVM not started");
        VmmApiException early = assertThrows(VmmApiException.class, api::start);
        assertTrue(early.reason().contains("without kernel"), early.getMessage());
        boot();
        VmmApiException late = assertThrows(VmmApiException.class,
                () -> api.setBootSource(new BootSource(path("other"), null, null)));
        assertEquals(400, late.status());
        assertTrue(late.getMessage().contains("PUT /boot-source") && late.reason().contains("after starting"),
                late.getMessage());
        assertThrows(VmmApiException.class,
                () -> api.createSnapshot(SnapshotCreate.full(path("vm.state"), path("vm.mem"))), "a running microVM");
        api.pause();
        api.createSnapshot(SnapshotCreate.full(path("vm.state"), path("vm.mem")));
        assertThrows(VmmApiException.class, () -> api.loadSnapshot(load(path("agent-2.vsock"))),
                "a load into a process that booted");
    }

    @Test
    void aRelaunchOnTheSocketOfTheProcessBeforeFailsUntilItIsUnlinked() throws Exception {
        boot();
        api.pause();
        api.createSnapshot(SnapshotCreate.full(path("vm.state"), path("vm.mem")));
        try (FakeVmm fresh = fake("api-2.sock");
                FirecrackerApi relaunched = new FirecrackerApi(dir.resolve("api-2.sock"), Duration.ofSeconds(5))) {
            VmmApiException inTheWay = assertThrows(VmmApiException.class,
                    () -> relaunched.loadSnapshot(load(path("agent.vsock"))));
            assertTrue(inTheWay.reason().contains("Address in use"), inTheWay.getMessage());
            Files.delete(dir.resolve("agent.vsock"));
            relaunched.loadSnapshot(load(path("agent.vsock")));
        }
    }

    @Test
    void aProcessThatIsNotThereIsSaidSo() throws Exception {
        try (FirecrackerApi nowhere = new FirecrackerApi(dir.resolve("none.sock"), Duration.ofSeconds(2))) {
            IOException e = assertThrows(IOException.class, nowhere::describe);
            assertTrue(e.getMessage().startsWith("cannot reach Firecracker's API at " + dir.resolve("none.sock") + " (GET /)"),
                    e.getMessage());
        }
    }

    @Test
    void aDriveIdThatIsNoNameIsRefusedBeforeAnythingIsSent() {
        assertThrows(IllegalArgumentException.class,
                () -> api.putDrive(new Drive("../actions", path("disk"), false, false)));
        assertTrue(vmm.received().isEmpty());
    }

    private void boot() throws IOException {
        api.configureMachine(new MachineConfig(2, 512, true));
        api.setBootSource(new BootSource(path("vmlinux"), path("initrd.img"), "console=ttyS0 reboot=k panic=1"));
        api.putDrive(new Drive("workspace", path("workspace.ext4"), false, false));
        api.putVsock(new Vsock(3, path("agent.vsock")));
        api.start();
    }

    private SnapshotLoad load(String vsock) {
        return new SnapshotLoad(path("vm.state"), MemoryBackend.file(path("vm.mem")), true, true, new VsockOverride(vsock));
    }

    private String path(String name) {
        return dir.resolve(name).toString();
    }

    private FakeVmm fake(String socket) throws Exception {
        return new FakeVmm(dir.resolve(socket), FirecrackerRules.DOCUMENT, new FirecrackerRules());
    }

    /** The golden fixture {@code name} of the version targeted, with this test's directory in it. */
    private List<JsonNode> fixture(String name) throws IOException {
        return FakeVmm.fixture(getClass(), "/firecracker/" + FirecrackerApi.TARGET + "/" + name + ".json", dir);
    }
}
