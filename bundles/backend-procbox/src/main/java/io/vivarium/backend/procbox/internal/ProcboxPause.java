package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.Path;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Pause of process sandboxes with the cgroup freezer ({@link Freezer}): every process stops where
 * it is, memory kept, the agent too (core answers for it meanwhile), and stays so across daemons.
 * A sandbox without a cgroup that freezes (made before pauses, or on a host without a freezer) is 501.
 */
@Component(service = PauseControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME)
public final class ProcboxPause implements PauseControl {

    private final ProcboxRuntime runtime;

    @Activate
    public ProcboxPause(@Reference ProcboxRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public void pause(SandboxInstance instance) {
        set(runtime.instances().own(instance), true);
    }

    @Override
    public void resume(SandboxInstance instance) {
        set(runtime.instances().own(instance), false);
    }

    private static void set(ProcboxInstance sandbox, boolean frozen) {
        Path cgroup = Freezer.of(sandbox.sandbox()).orElseThrow(() -> ApiException.notImplemented("sandbox " + sandbox.id()
                + " has no cgroup that freezes (made before procbox paused sandboxes, or on a host without the cgroup "
                + "freezer), so it cannot be paused"));
        try {
            Freezer.set(cgroup, frozen);
        } catch (IOException e) {
            throw ApiException.internal("cannot " + (frozen ? "pause" : "resume") + " sandbox " + sandbox.id() + ": "
                    + e.getMessage(), e);
        }
        sandbox.paused(frozen);
    }
}
