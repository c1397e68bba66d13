package io.vivarium.backend.firecracker.internal;

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
 * The backend conformance suite on any host, against {@link FakeFirecrackerProcess}: every request
 * the backend sends passes Firecracker's pinned API document and its rules, and the guest is the
 * real agent in an {@link EmulatedGuest}. What this proves is the backend's side (the VMM's start,
 * its configuration, the agent through the vsock socket, adoption, the end), not a microVM's:
 * {@link FirecrackerMicroVmConformanceTest} runs the same suite where KVM and Firecracker are.
 */
class FirecrackerBackendConformanceTest extends VmmBackendSuite {

    @TempDir
    static Path home;
    private static VmmSettings settings;

    @BeforeAll
    static void fakeHost() throws IOException {
        Path images = Files.createDirectories(home.resolve("images"));
        settings = new VmmSettings(FakeFirecrackerProcess.executable(home), images, "default", 256, 1, 64,
                Duration.ofSeconds(60), Files.createDirectories(home.resolve("s")));
        FakeVmmProcess.image(images, "default");
    }

    @Override
    protected boolean emulated() {
        return true;
    }

    @Override
    protected boolean diffs() {
        return true;
    }

    @Override
    protected Revision newRevision() {
        FirecrackerRuntime runtime = new FirecrackerRuntime(settings, new HostKvm(true, "emulated: the fake VMM uses no KVM"),
                home.resolve("agent"));
        return new Revision(new FirecrackerBackend(runtime), new FirecrackerPause(runtime), new FirecrackerPower(runtime), new FirecrackerCheckpoints(runtime),
                runtime::close);
    }
}
