package io.vivarium.backend.firecracker.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.kit.vmm.VmmBoot;
import io.vivarium.kit.vmm.VmmSnapshots;
import io.vivarium.testkit.vmm.FakeVmm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the backend itself sends ({@link FirecrackerDriver}, as the kit's launcher and checkpoints
 * call it), against the pinned document and Firecracker's rules, compared with the golden fixtures
 * {@code driver-*.json} of the version targeted: a boot that tracks dirty pages, a first checkpoint
 * full and the next a diff onto a copy of the one before, a load into a fresh process with the
 * vsock's socket given anew, after which a diff is allowed again.
 */
class FirecrackerDriverContractTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final FirecrackerDriver driver = new FirecrackerDriver();

    @TempDir
    Path dir;

    @Test
    void aBootThenCheckpointsFullThenDiffThenALoadSendWhatTheFixturesHold() throws Exception {
        Path first = Files.createDirectory(dir.resolve("first"));
        Path second = Files.createDirectory(dir.resolve("second"));
        try (FakeVmm vmm = fake("api.sock")) {
            Path api = dir.resolve("api.sock");
            driver.boot(api, new VmmBoot(2, 512, dir.resolve("vmlinux"), dir.resolve("initrd.img"),
                    "console=ttyS0 reboot=k pci=off vivarium.channel=vsock:1024", dir.resolve("workspace.ext4"),
                    dir.resolve("vsock.sock"), 3));
            assertEquals(fixture("driver-boot"), vmm.receivedAsFixture());
            int booted = vmm.received().size();

            driver.pause(api);
            assertEquals(VmmSnapshots.FULL, driver.save(api, first, null));
            assertEquals(VmmSnapshots.DIFF, driver.save(api, second, first), "a save on a base writes a diff");
            driver.resume(api);
            assertEquals(fixture("driver-checkpoints"), vmm.receivedAsFixture().subList(booted, vmm.received().size()));
            assertEquals(Files.readString(first.resolve(FirecrackerDriver.MEMORY)),
                    Files.readString(second.resolve(FirecrackerDriver.MEMORY)),
                    "the diff was written onto a copy of its base's memory");
        }

        try (FakeVmm fresh = fake("api-2.sock")) {
            Path api = dir.resolve("api-2.sock");
            driver.load(api, second, dir.resolve("vsock-2.sock"));
            assertEquals(fixture("driver-load"), fresh.receivedAsFixture());
            assertTrue(driver.paused(api) == false, "a loaded microVM runs");
            driver.pause(api);
            assertEquals(VmmSnapshots.DIFF, driver.save(api, Files.createDirectory(dir.resolve("third")), second),
                    "a microVM loaded with dirty page tracking takes a diff on what it loaded");
        }
    }

    @Test
    void everyDriverFixtureFollowsThePinnedDocument() throws Exception {
        for (String scenario : List.of("driver-boot", "driver-checkpoints", "driver-load")) {
            for (JsonNode request : fixture(scenario)) {
                assertEquals("", FirecrackerRules.DOCUMENT.violations(request.get("method").asText(),
                        request.get("path").asText(), JSON.writeValueAsString(request.get("body"))), scenario + ": " + request);
            }
        }
    }

    private FakeVmm fake(String socket) throws Exception {
        return new FakeVmm(dir.resolve(socket), FirecrackerRules.DOCUMENT, new FirecrackerRules());
    }

    private List<JsonNode> fixture(String name) throws IOException {
        return FakeVmm.fixture(getClass(), "/firecracker/" + FirecrackerApi.TARGET + "/" + name + ".json", dir);
    }
}
