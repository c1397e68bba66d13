package io.vivarium.backend.cloudhypervisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmGuestImage;
import io.vivarium.kit.vmm.VmmSettings;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code GET /v1/backends} says of Cloud Hypervisor, what its guests are told, and that it makes VMs alone. */
class CloudHypervisorRuntimeTest {
    @TempDir
    Path dir;

    @Test
    void itIsAMachineBackendThatMakesNoSandboxes() {
        CloudHypervisorBackend backend = new CloudHypervisorBackend(runtime());
        assertTrue(backend.machine());
        assertFalse(backend.sandboxes());
        assertEquals("cloud-hypervisor", backend.name());
    }

    @Test
    void whatIsMissingAndTheApiDocumentAreSaid() {
        CloudHypervisorRuntime runtime = runtime();
        String reason = runtime.vmm().probe().availability().reason();
        assertTrue(reason.contains(dir.resolve("cloud-hypervisor") + " is missing (Cloud Hypervisor is in no Debian release)"),
                reason);
        assertEquals("Cloud Hypervisor API " + CloudHypervisorApi.TARGET + " (the document this backend is written and "
                + "contract-tested against)", runtime.vmm().details().get("api"));
    }

    @Test
    void theGuestIsToldToServeItsAgentOnVsockAndKeepsItsPci() {
        assertEquals("console=ttyS0 panic=-1 quiet vivarium.channel=vsock:1024",
                runtime().vmm().launcher().cmdline(new VmmGuestImage(dir, "console=ttyS0 panic=-1 quiet")));
    }

    private CloudHypervisorRuntime runtime() {
        return new CloudHypervisorRuntime(new VmmSettings(dir.resolve("cloud-hypervisor"), dir.resolve("images"), "default",
                256, 1, 64, Duration.ofSeconds(5), dir.resolve("s")), new HostKvm(true, "the CPU has vmx"), dir.resolve("agent"));
    }
}
