package io.vivarium.testkit;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

/** Core's fake passes the lifecycle half of the contract; it runs no processes. */
class FakeBackendConformanceTest extends SandboxBackendSuite {

    /** The fake's "processes", shared by every backend object of one check, as a real host's are. */
    private final Set<Long> running = ConcurrentHashMap.newKeySet();

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        return new FakeBackend(running);
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return ((FakeBackend) backend).pauseControl();
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
