package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmInstance;
import io.vivarium.kit.vmm.VmmSettings;
import io.vivarium.testkit.SandboxBackendSuite;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;

/**
 * The backend conformance suite for the Firecracker backend, on a host given by the subclass:
 * each new backend is a new revision of the runtime, the one before let go of first, as OSGi
 * deactivates it.
 */
abstract class FirecrackerSuite extends SandboxBackendSuite {

    private static final List<FirecrackerRuntime> REVISIONS = new CopyOnWriteArrayList<>();

    abstract VmmSettings settings();

    abstract HostKvm kvm();

    /** Where each revision writes the agent binary that starts its VMMs. */
    abstract Path agentDir();

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().close();
        }
        FirecrackerRuntime next = new FirecrackerRuntime(settings(), kvm(), agentDir());
        REVISIONS.add(next);
        return new FirecrackerBackend(next);
    }

    @AfterAll
    static void letGo() {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().close();
        }
        REVISIONS.clear();
    }

    /** Kills the VMM from outside, as a crash would: its guest goes with it. */
    @Override
    protected void killInstance(SandboxInstance instance) {
        ProcessHandle.of(((VmmInstance) instance).process().pid()).ifPresent(ProcessHandle::destroyForcibly);
    }

    /** Kills the agent from inside, as a sandbox process could; the guest's init starts it again. */
    @Override
    protected void killAgent(SandboxInstance instance) {
        exec(instance, "/bin/sh", "-c", "(sleep 0.3; kill -9 $(pidof vivarium-agent)) >/dev/null 2>&1 </dev/null &");
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.LIMITS, "pids_limit is refused (501: a guest's processes are bounded by its memory)");
    }
}
