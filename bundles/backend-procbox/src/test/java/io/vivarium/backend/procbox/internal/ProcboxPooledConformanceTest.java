package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.PauseControl;
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

    /** The revisions of the running check, closed after it: that discards their pooled sandboxes before its state directory goes. */
    private final List<Procbox> revisions = new CopyOnWriteArrayList<>();

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    @AfterEach
    void closeRevisions() {
        revisions.forEach(Procbox::close);
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        Procbox procbox = Procbox.pooled(ProcboxSettings.defaultTemplateDir(), POOL, null);
        revisions.add(procbox);
        procbox.runtime().pool().start(stateDir);
        long deadline = System.nanoTime() + FILL_WAIT_NANOS;
        while (procbox.runtime().pool().ready() < POOL) {
            if (System.nanoTime() > deadline || !Sleep.briefly(10)) {
                fail("the sandbox pool did not fill within 30 s: " + procbox.backend().details().get("sandbox_pool"));
            }
        }
        return procbox.backend();
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return Procbox.of(backend, revisions).pause();
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
