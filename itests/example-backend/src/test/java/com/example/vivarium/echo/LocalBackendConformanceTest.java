package com.example.vivarium.echo;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;

import org.junit.jupiter.api.AfterAll;

/**
 * The example vendor backend passes the conformance kit, as a vendor's backend would in its own
 * build: each backend object stands for one revision (its own runtime), as DS would make it. An
 * instance is its agent, so killing the instance and killing its agent are the same {@code kill -9}.
 */
class LocalBackendConformanceTest extends SandboxBackendSuite {

    /** Let go of once every check of the class has run (the kit destroys the shared instance after). */
    private static final List<LocalRuntime> REVISIONS = new CopyOnWriteArrayList<>();

    @AfterAll
    static void letGoOfRevisions() {
        REVISIONS.forEach(LocalRuntime::close);
        REVISIONS.clear();
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        LocalRuntime runtime = new LocalRuntime(stateDir.resolve("agent"));
        REVISIONS.add(runtime);
        return new LocalBackend(runtime);
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.LIMITS, "example-local enforces no limits: its sandboxes are plain host processes, "
                + "without cgroups or a sized workspace",
                Feature.ISOLATED_NETWORK, "example-local's sandboxes are plain host processes in the host's network");
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        killAgent(instance);
    }

    @Override
    protected void killAgent(SandboxInstance instance) {
        ProcessHandle.of(((LocalInstance) instance).agent().pid()).ifPresent(ProcessHandle::destroyForcibly);
    }
}
