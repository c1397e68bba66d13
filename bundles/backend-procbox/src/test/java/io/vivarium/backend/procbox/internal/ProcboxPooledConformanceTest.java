package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.fail;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/**
 * procbox passes the conformance kit with its sandbox pool on, full before each check starts: a
 * create of the default spec is then a sandbox the pool launched ahead and handed over.
 */
class ProcboxPooledConformanceTest extends SandboxBackendSuite {

    private static final int POOL = 2;
    private static final long FILL_WAIT_NANOS = 30_000_000_000L;

    /** The backends of the running check, closed after it: that discards their pooled sandboxes before its state directory goes. */
    private final List<ProcboxBackend> backends = new CopyOnWriteArrayList<>();

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    @AfterEach
    void closeBackends() {
        backends.forEach(ProcboxBackend::close);
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        ProcboxBackend backend = new ProcboxBackend(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, ProcboxSettings.DEFAULT_PIDS_LIMIT,
                ProcboxSettings.DEFAULT_DISK_LIMIT_MIB, ProcboxSettings.defaultTemplateDir()).withSandboxPool(POOL), true,
                null);
        backends.add(backend);
        backend.startSandboxPool(stateDir);
        long deadline = System.nanoTime() + FILL_WAIT_NANOS;
        while (backend.pooledReady() < POOL) {
            if (System.nanoTime() > deadline || !Sleep.briefly(10)) {
                fail("the sandbox pool did not fill within 30 s: " + backend.details().get("sandbox_pool"));
            }
        }
        return backend;
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        ProcessHandle.of(((ProcboxInstance) instance).sandbox().init().pid()).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Override
    protected void killAgent(SandboxInstance instance) {
        ProcboxSandboxTest.killEverySandboxUserProcess(instance);
    }
}
