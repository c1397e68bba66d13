package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.SandboxBackend;
import java.util.List;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.FixedStorage;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * One revision of procbox as Declarative Services wires it, for tests without a framework: the
 * runtime, and the backend and seams made on it. {@link #close()} is the runtime's deactivation of
 * a stopping daemon.
 */
record Procbox(ProcboxRuntime runtime, ProcboxBackend backend, ProcboxImages images, ProcboxScratchRuns scratchRuns)
        implements AutoCloseable {

    Procbox(ProcboxRuntime runtime) {
        this(runtime, new ProcboxBackend(runtime), new ProcboxImages(runtime), new ProcboxScratchRuns(runtime));
    }

    Procbox(ProcboxSettings settings) {
        this(new ProcboxRuntime(settings));
    }

    /** What a root daemon with the default settings runs, but without a sandbox pool. */
    /** The runtime's pause seam, as its bundle registers it. */
    ProcboxPause pause() {
        return new ProcboxPause(runtime);
    }

    /** The one of {@code revisions} whose backend is {@code backend}. */
    static Procbox of(SandboxBackend backend, List<Procbox> revisions) {
        return revisions.stream().filter(p -> p.backend() == backend).findFirst().orElseThrow();
    }

    static Procbox root() {
        return new Procbox(rootSettings(false));
    }

    static ProcboxSettings rootSettings(boolean userNamespace) {
        return new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534, ProcboxSettings.DEFAULT_CGROUP_ROOT,
                userNamespace);
    }

    /** The default settings of a root daemon with a sandbox pool of {@code size}, in a directory named {@code poolName} (null: this process's). */
    static Procbox pooled(Path templateDir, int size, String poolName) {
        ProcboxSettings settings = new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, ProcboxSettings.DEFAULT_PIDS_LIMIT,
                ProcboxSettings.DEFAULT_DISK_LIMIT_MIB, templateDir).withSandboxPool(size);
        return new Procbox(new ProcboxRuntime(settings, true, poolName));
    }

    /** Creates as core does: no storage (procbox stores nothing at create), a minute to do it. */
    SandboxInstance create(InstanceSpec spec) {
        return backend.create(spec, FixedStorage.of(), operation());
    }

    static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(Duration.ofMinutes(1)));
    }

    @Override
    public void close() {
        runtime.close();
    }
}
