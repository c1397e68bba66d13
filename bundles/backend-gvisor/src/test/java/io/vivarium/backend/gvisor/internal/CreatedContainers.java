package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

import java.util.ArrayList;
import java.util.List;

/** The containers a test created, in order, for it to destroy after itself even when it fails. */
final class CreatedContainers {

    private final List<InstanceSpec> specs = new ArrayList<>();
    private final List<SandboxInstance> instances = new ArrayList<>();

    SandboxInstance create(Revision revision, InstanceSpec spec) {
        SandboxInstance i = revision.create(spec);
        specs.add(spec);
        instances.add(i);
        return i;
    }

    InstanceSpec spec(int k) {
        return specs.get(k);
    }

    /** The {@code k}th container is now reached through {@code adopted} (a new backend revision adopted it). */
    void adopted(int k, SandboxInstance adopted) {
        instances.set(k, adopted);
    }

    /** Destroys the {@code k}th container; it is no longer this list's to destroy. */
    void destroy(Revision revision, int k) {
        revision.backend().destroy(specs.remove(k), instances.remove(k).state());
    }

    /** Destroys every container left and lets go of {@code revision}; nothing to do without one. */
    void destroyAll(Revision revision) {
        if (revision == null) {
            return;
        }
        while (!specs.isEmpty()) {
            destroy(revision, 0);
        }
        revision.close();
    }
}
