package io.vivarium.core.internal;

import java.nio.file.Path;
import java.util.function.BooleanSupplier;

/**
 * What the sandbox, VM and snapshot components share, built and owned by {@link SandboxManager}
 * (which the other two reference): the backends and their seams, the storage strategies, the sandboxes over the state store (each with its
 * lifecycle lock and {@link OperationGate}), creating and deleting them within {@code max_sandboxes},
 * the ways into a live one, the volumes they mount, the templates they are made from, and pausing them (by request and while idle). {@code stopping} turns true when the owner is deactivated.
 */
record Core(BackendRegistry registry, StorageRegistry storage, Sandboxes sandboxes, SandboxLifecycle lifecycle, LiveInstances live,
        GuestAccess guest, Checkpointing checkpointing, Volumes volumes, Templates templates, Pausing pausing, Path stateDir, BooleanSupplier stopping) {
}
