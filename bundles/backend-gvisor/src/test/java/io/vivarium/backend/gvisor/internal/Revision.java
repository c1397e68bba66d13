package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.FixedStorage;

import java.util.List;

/**
 * One revision of the backend as Declarative Services wires it, without OSGi: the runtime, and the
 * backend and its seams built on it. {@link #close()} is the runtime's deactivation: it lets go of
 * the containers, which keep running for the next revision to adopt.
 */
record Revision(GvisorRuntime runtime, GvisorBackend backend, GvisorImages images, GvisorCheckpoints checkpoints,
        GvisorPause pause, GvisorHibernation hibernation) implements AutoCloseable {

    static Revision of(GvisorSettings settings) {
        GvisorRuntime runtime = new GvisorRuntime(settings);
        return new Revision(runtime, new GvisorBackend(runtime), new GvisorImages(runtime), new GvisorCheckpoints(runtime),
                new GvisorPause(runtime), new GvisorHibernation(runtime));
    }

    /** The revision among {@code revisions} whose backend object is {@code backend}. */
    static Revision of(SandboxBackend backend, List<Revision> revisions) {
        return revisions.stream().filter(r -> r.backend() == backend).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no revision made " + backend));
    }

    /** Creates as core does, with no storage (a create stores nothing) and the default context. */
    SandboxInstance create(InstanceSpec spec) {
        return backend.create(spec, FixedStorage.of(), GvisorHost.operation());
    }

    @Override
    public void close() {
        runtime.close();
    }
}
