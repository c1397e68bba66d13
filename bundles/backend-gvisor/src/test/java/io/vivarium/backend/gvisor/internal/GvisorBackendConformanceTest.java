package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.CheckpointsSuite;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kit's contract, checkpoints, pause and the cold tier included, on real gVisor containers, with the host's
 * /usr as their root filesystem.
 */
class GvisorBackendConformanceTest extends CheckpointsSuite {

    @TempDir
    static Path agentDir;

    /** Every revision made, the latest last; each is let go of when the next one comes, as OSGi deactivates it first. */
    private static final List<Revision> REVISIONS = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsRunsc() {
        GvisorHost.assumeRunsc();
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().close();
        }
        Revision next = GvisorHost.revision(agentDir);
        REVISIONS.add(next);
        return next.backend();
    }

    @AfterAll
    static void letGo() {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().close();
        }
        REVISIONS.clear();
    }

    @Override
    protected Checkpoints checkpoints(SandboxBackend backend) {
        return Revision.of(backend, REVISIONS).checkpoints();
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return Revision.of(backend, REVISIONS).pause();
    }

    @Override
    protected Hibernation hibernation(SandboxBackend backend) {
        return Revision.of(backend, REVISIONS).hibernation();
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.LIMITS, "pids_limit and disk_limit_mib are refused (501): runsc 2022's pids cgroup "
                + "bounds the sandbox's host threads, not the guest's processes, and the workspace is a host directory");
    }

    /** Kills the container's sandbox process from outside, as a crash would; its files stay. */
    @Override
    protected void killInstance(SandboxInstance instance) throws IOException {
        ProcessHandle.of(((GvisorInstance) instance).record().sandboxPid()).ifPresent(ProcessHandle::destroyForcibly);
    }

    /** Kills the agent's worker from inside, as a sandbox process could; its root supervisor restarts it. */
    @Override
    protected void killAgent(SandboxInstance instance) {
        exec(instance, "/bin/sh", "-c", "(sleep 0.3; kill -9 $(pidof vivarium-agent)) >/dev/null 2>&1 </dev/null &");
    }
}
