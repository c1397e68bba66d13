package io.vivarium.testkit.vmm;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;

/**
 * The backend conformance suite for a backend of VMM guests reached over vsock (the kit's
 * {@code VmmBackend}): each new backend is a new revision of its runtime, the one before let go of
 * first, as OSGi deactivates it; a crash kills the VMM (the pid its state records), and a sandbox
 * process kills the agent, which the guest's /init starts again.
 */
public abstract class VmmBackendSuite extends SandboxBackendSuite {

    /** A revision of a VMM backend's runtime: its backend, and how it lets go at deactivation. */
    public record Revision(SandboxBackend backend, Runnable letGo) {
    }

    private static final List<Revision> REVISIONS = new CopyOnWriteArrayList<>();

    /** A new revision of the backend under test. */
    protected abstract Revision newRevision();

    @Override
    protected final SandboxBackend newBackend(Path stateDir) {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().letGo().run();
        }
        Revision next = newRevision();
        REVISIONS.add(next);
        return next.backend();
    }

    @AfterAll
    static void letGo() {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().letGo().run();
        }
        REVISIONS.clear();
    }

    /** Kills the VMM from outside, as a crash would: its guest goes with it. */
    @Override
    protected void killInstance(SandboxInstance instance) {
        ProcessHandle.of(instance.state().pid()).ifPresent(ProcessHandle::destroyForcibly);
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
