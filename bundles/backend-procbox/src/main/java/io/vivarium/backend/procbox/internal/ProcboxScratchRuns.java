package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;
import io.vivarium.api.spi.ScratchRuns;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Dry-runs of process sandboxes, whose workspaces are on the host: a command runs in a short-lived
 * twin of the sandbox on an overlay (or a copy) of its workspace ({@link DryRunner}), so the sandbox
 * is never changed.
 */
@Component(service = ScratchRuns.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME)
public final class ProcboxScratchRuns implements ScratchRuns {

    private final ProcboxRuntime runtime;
    private final DryRunner runner;

    @Activate
    public ProcboxScratchRuns(@Reference ProcboxRuntime runtime) {
        this.runtime = runtime;
        this.runner = new DryRunner(runtime.commands(), runtime.overlayDryRuns());
    }

    @Override
    public ScratchRun run(SandboxInstance instance, ExecRequest request) {
        return runner.run(runtime.instances().own(instance), request);
    }
}
