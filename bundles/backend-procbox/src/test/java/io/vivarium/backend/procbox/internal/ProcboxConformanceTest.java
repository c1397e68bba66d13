package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;

import java.nio.file.Path;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/**
 * procbox passes the conformance kit. Its keep-alive is the init's one child ({@code sleep
 * infinity}); bubblewrap's init exits with it, which takes the whole sandbox along, so a killed
 * keep-alive leaves the sandbox reported dead.
 */
class ProcboxConformanceTest extends SandboxBackendSuite {

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        return ProcboxSandboxTest.rootBackend();
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        ProcessHandle.of(init(instance).pid()).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Override
    protected void killAgent(SandboxInstance instance) {
        ProcessHandle.of(init(instance).pid()).stream()
                .flatMap(ProcessHandle::children)
                .filter(child -> ProcFs.command(child.pid()).filter(SandboxCommands.SANDBOX_COMMAND_NAME::equals).isPresent())
                .forEach(ProcessHandle::destroyForcibly);
    }

    private static InitProcess init(SandboxInstance instance) {
        return ((ProcboxInstance) instance).sandbox().init();
    }
}
