package io.vivarium.backend.cloudhypervisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.ConsoleConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.CpusConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.DiskConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.MemoryConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.PayloadConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VmConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VsockConfig;
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
 * {@link CloudHypervisorApi} against the published document it targets, through a
 * {@link FakeVmm} with {@link CloudHypervisorRules}: what it sends is valid by the document, is
 * what the golden fixtures of that version hold, and keeps the rules Cloud Hypervisor enforces
 * beyond the document.
 */
class CloudHypervisorApiContractTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private FakeVmm vmm;
    private CloudHypervisorApi api;

    @BeforeEach
    void startAProcess() throws Exception {
        vmm = fake("api.sock");
        api = new CloudHypervisorApi(dir.resolve("api.sock"), Duration.ofSeconds(5));
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
        assertEquals("Running", api.state());
        assertEquals("v" + CloudHypervisorApi.TARGET, api.version());
    }

    @Test
    void aSnapshotIsOfAPausedVmAndRestoresIntoAProcessWithoutOneOnceTheOldVsockSocketIsGone() throws Exception {
        boot();
        int booted = vmm.received().size();
        Files.createDirectory(dir.resolve("snap"));
        api.pause();
        api.snapshot(dir.resolve("snap"));
        api.resume();
        assertEquals(fixture("snapshot"), vmm.receivedAsFixture().subList(booted, vmm.received().size()));
        api.shutdownVmm();

        try (FakeVmm fresh = fake("api-2.sock");
                CloudHypervisorApi relaunched = new CloudHypervisorApi(dir.resolve("api-2.sock"), Duration.ofSeconds(5))) {
            VmmApiException inTheWay = assertThrows(VmmApiException.class, () -> relaunched.restore(dir.resolve("snap"), true));
            assertTrue(inTheWay.reason().contains("Address in use"),
                    "the snapshot keeps its vsock socket's path: the process before's is in the way: " + inTheWay.getMessage());
            Files.delete(dir.resolve("agent.vsock"));
            relaunched.restore(dir.resolve("snap"), true);
            assertEquals(fixture("restore"), fresh.receivedAsFixture().subList(1, 2));
            assertEquals("Running", relaunched.state());
        }
    }

    @Test
    void everyFixtureFollowsThePinnedDocumentOfItsVersion() throws Exception {
        assertEquals(CloudHypervisorApi.TARGET, CloudHypervisorRules.DOCUMENT.version(),
                "the document pinned is of the version the client targets");
        for (String scenario : List.of("boot", "snapshot", "restore")) {
            for (JsonNode request : fixture(scenario)) {
                JsonNode body = request.get("body");
                assertEquals("", CloudHypervisorRules.DOCUMENT.violations(request.get("method").asText(),
                        request.get("path").asText(), body.isNull() ? null : JSON.writeValueAsString(body)),
                        scenario + ": " + request);
            }
        }
    }

    @Test
    void aFieldTheDocumentDoesNotHaveIsRefused() {
        assertFalse(CloudHypervisorRules.DOCUMENT.violations("PUT", "/api/v1/vm.restore",
                "{\"source_url\": \"file:///s\", \"vsock_override\": {\"socket\": \"/v\"}}").isEmpty(),
                "Cloud Hypervisor's restore has no override of the vsock's socket (Firecracker's has)");
        assertFalse(CloudHypervisorRules.DOCUMENT.violations("PUT", "/api/v1/vm.create",
                "{\"payload\": {\"kernel\": \"/k\"}, \"vsock\": {\"cid\": 2, \"socket\": \"/v\"}}").isEmpty(),
                "and a value out of the document's range (cid 2 is the host's)");
    }

    @Test
    void whatCloudHypervisorRefusesComesBackWithItsStatusAndText() throws Exception {
        VmmApiException none = assertThrows(VmmApiException.class, api::boot);
        assertEquals(404, none.status(), "no VM created: " + none.getMessage());
        boot();
        VmmApiException running = assertThrows(VmmApiException.class, api::resume);
        assertEquals(405, running.status(), running.getMessage());
        Files.createDirectory(dir.resolve("snap"));
        VmmApiException notPaused = assertThrows(VmmApiException.class, () -> api.snapshot(dir.resolve("snap")));
        assertTrue(notPaused.reason().contains("paused"), notPaused.getMessage());
        VmmApiException created = assertThrows(VmmApiException.class, () -> api.restore(dir.resolve("snap"), true));
        assertEquals(404, created.status(), "a restore into a process with a VM: " + created.getMessage());
        assertTrue(created.getMessage().startsWith("Cloud Hypervisor refused PUT /api/v1/vm.restore (404): "),
                created.getMessage());
    }

    @Test
    void aProcessThatIsNotThereIsSaidSo() throws Exception {
        try (CloudHypervisorApi nowhere = new CloudHypervisorApi(dir.resolve("none.sock"), Duration.ofSeconds(2))) {
            IOException e = assertThrows(IOException.class, nowhere::state);
            assertTrue(e.getMessage().startsWith("cannot reach Cloud Hypervisor's API at " + dir.resolve("none.sock")
                    + " (GET /api/v1/vm.info)"), e.getMessage());
        }
    }

    private void boot() throws IOException {
        api.create(new VmConfig(CpusConfig.of(2), MemoryConfig.mib(512),
                new PayloadConfig(path("vmlinux"), path("initrd.img"), "console=ttyS0 reboot=k panic=1"),
                List.of(new DiskConfig(path("workspace.raw"), false)), new VsockConfig(3, path("agent.vsock")),
                ConsoleConfig.toFile(path("console.log")), ConsoleConfig.off()));
        api.boot();
    }

    private String path(String name) {
        return dir.resolve(name).toString();
    }

    private FakeVmm fake(String socket) throws Exception {
        return new FakeVmm(dir.resolve(socket), CloudHypervisorRules.DOCUMENT, new CloudHypervisorRules());
    }

    /** The golden fixture {@code name} of the version targeted, with this test's directory in it. */
    private List<JsonNode> fixture(String name) throws IOException {
        return FakeVmm.fixture(getClass(), "/cloud-hypervisor/" + CloudHypervisorApi.TARGET + "/" + name + ".json", dir);
    }
}
