package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.api.spi.Availability;
import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmSettings;
import io.vivarium.testkit.vmm.VmmBackendSuite;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backend conformance suite with real Cloud Hypervisor VMs: on a host with a KVM that runs
 * guests, the cloud-hypervisor binary ({@code $CLOUD_HYPERVISOR}, else
 * {@code /usr/local/bin/cloud-hypervisor}) and the default guest image; elsewhere every check is
 * skipped with the backend's own reason (docs/cloud-hypervisor.md).
 */
class CloudHypervisorVmConformanceTest extends VmmBackendSuite {

    @TempDir
    static Path home;

    private static final HostKvm KVM = HostKvm.check();

    @BeforeEach
    void needsCloudHypervisorAndKvm() {
        Availability availability = new CloudHypervisorRuntime(settings(), KVM, home.resolve("agent")).vmm().probe()
                .availability();
        Assumptions.assumeTrue(availability.available(), "cloud-hypervisor is unavailable here: " + availability.reason());
    }

    static VmmSettings settings() {
        String binary = System.getenv("CLOUD_HYPERVISOR");
        return new VmmSettings(Path.of(binary != null ? binary : "/usr/local/bin/cloud-hypervisor"),
                VmmSettings.imageDir(""), "default", 256, 1, 256, Duration.ofSeconds(60), home.resolve("s"));
    }

    @Override
    protected Revision newRevision() {
        CloudHypervisorRuntime runtime = new CloudHypervisorRuntime(settings(), KVM, home.resolve("agent"));
        return new Revision(new CloudHypervisorBackend(runtime), new CloudHypervisorPause(runtime), new CloudHypervisorPower(runtime), new CloudHypervisorCheckpoints(runtime),
                runtime::close);
    }
}
