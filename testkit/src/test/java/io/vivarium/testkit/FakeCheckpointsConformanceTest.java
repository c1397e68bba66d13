package io.vivarium.testkit;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

/** The fake VM passes the lifecycle half of the checkpoint contract; it runs no processes. */
class FakeCheckpointsConformanceTest extends CheckpointsSuite {

    private final Set<Long> running = ConcurrentHashMap.newKeySet();
    private final FakeCheckpoints checkpoints = new FakeCheckpoints();

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        FakeBackend b = new FakeBackend(running);
        b.checkpoints = checkpoints;
        return b;
    }

    @Override
    protected Checkpoints checkpoints(SandboxBackend backend) {
        return checkpoints.checkpoints();
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.PROCESSES, "the fake runs no processes: exec echoes its argv",
                Feature.AGENT, "the fake has no resident process",
                Feature.LIMITS, "the fake enforces no limits");
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        running.remove(instance.state().pid());
    }
}
