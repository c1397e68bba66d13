package io.vivarium.backend.firecracker.internal;

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
 * The backend conformance suite with real Firecracker microVMs: on a host with a KVM that runs
 * guests, the firecracker binary ({@code $FIRECRACKER}, else {@code /usr/local/bin/firecracker})
 * and the default guest image ({@code $VIVARIUM_IMAGES}, else {@code ~/.cache/vivarium/images});
 * elsewhere every check is skipped with the backend's own reason. How an operator runs it:
 * docs/firecracker.md.
 */
class FirecrackerMicroVmConformanceTest extends VmmBackendSuite {

    @TempDir
    static Path home;

    private static final HostKvm KVM = HostKvm.check();

    @BeforeEach
    void needsFirecrackerAndKvm() {
        Availability availability = new FirecrackerRuntime(settings(), KVM, home.resolve("agent")).vmm().probe().availability();
        Assumptions.assumeTrue(availability.available(), "firecracker is unavailable here: " + availability.reason());
    }

    static VmmSettings settings() {
        String binary = System.getenv("FIRECRACKER");
        return new VmmSettings(Path.of(binary != null ? binary : "/usr/local/bin/firecracker"), VmmSettings.imageDir(""),
                "default", 256, 1, 256, Duration.ofSeconds(60), home.resolve("s"));
    }

    @Override
    protected boolean diffs() {
        return true;
    }

    @Override
    protected Revision newRevision() {
        FirecrackerRuntime runtime = new FirecrackerRuntime(settings(), KVM, home.resolve("agent"));
        return new Revision(new FirecrackerBackend(runtime), new FirecrackerPause(runtime), new FirecrackerPower(runtime), new FirecrackerCheckpoints(runtime),
                runtime::close);
    }
}
