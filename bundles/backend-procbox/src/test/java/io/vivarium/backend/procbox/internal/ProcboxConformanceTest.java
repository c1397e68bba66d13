package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/**
 * procbox passes the conformance kit. Its agent is killed as a sandbox process could: {@code kill
 * -9 -1} as the sandbox user, which kills the agent's worker and everything else of that user; the
 * agent's root supervisor restarts the worker on the same socket, so the sandbox stays usable.
 */
class ProcboxConformanceTest extends SandboxBackendSuite {

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    /** Closed once every test of the class has destroyed its sandboxes: that deletes their pools of ready images. */
    private static final List<Procbox> REVISIONS = new CopyOnWriteArrayList<>();

    @AfterAll
    static void closeRevisions() {
        REVISIONS.forEach(Procbox::close);
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        Procbox procbox = Procbox.root();
        REVISIONS.add(procbox);
        return procbox.backend();
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return Procbox.of(backend, REVISIONS).pause();
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        ProcessHandle.of(init(instance).pid()).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Override
    protected void killAgent(SandboxInstance instance) {
        ProcboxSandboxTest.killEverySandboxUserProcess(instance);
    }

    private static InitProcess init(SandboxInstance instance) {
        return ((ProcboxInstance) instance).sandbox().init();
    }
}
