package io.vivarium.backend.cloudhypervisor.internal;

import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmSettings;
import io.vivarium.testkit.vmm.EmulatedGuest;
import io.vivarium.testkit.vmm.FakeVmmProcess;
import io.vivarium.testkit.vmm.VmmBackendSuite;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backend conformance suite on any host, against {@link FakeCloudHypervisorProcess}: every
 * request the backend sends passes Cloud Hypervisor's pinned API document and its rules, and the
 * guest is the real agent in an {@link EmulatedGuest}. What this proves is the backend's side, not a
 * VM's: {@link CloudHypervisorVmConformanceTest} runs the same suite where KVM and Cloud Hypervisor are.
 */
class CloudHypervisorBackendConformanceTest extends VmmBackendSuite {

    @TempDir
    static Path home;
    private static VmmSettings settings;

    @BeforeAll
    static void fakeHost() throws IOException {
        Path images = Files.createDirectories(home.resolve("images"));
        settings = new VmmSettings(FakeCloudHypervisorProcess.executable(home), images, "default", 256, 1, 64,
                Duration.ofSeconds(60), Files.createDirectories(home.resolve("s")));
        FakeVmmProcess.image(images, "default");
    }

    @Override
    protected boolean emulated() {
        return true;
    }

    @Override
    protected Revision newRevision() {
        CloudHypervisorRuntime runtime = new CloudHypervisorRuntime(settings,
                new HostKvm(true, "emulated: the fake VMM uses no KVM"), home.resolve("agent"));
        return new Revision(new CloudHypervisorBackend(runtime), new CloudHypervisorPause(runtime), new CloudHypervisorPower(runtime), new CloudHypervisorCheckpoints(runtime),
                runtime::close);
    }
}
