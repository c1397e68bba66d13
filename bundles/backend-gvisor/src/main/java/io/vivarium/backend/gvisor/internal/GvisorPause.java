package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Instant;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Pause of gVisor containers: {@code runsc pause} freezes every process of the container, its
 * agent too (core answers 409 meanwhile), and runsc keeps it frozen across daemons;
 * {@code runsc resume} runs it on.
 */
@Component(service = PauseControl.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME)
public final class GvisorPause implements PauseControl {

    private final GvisorRuntime runtime;

    @Activate
    public GvisorPause(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public void pause(SandboxInstance instance) {
        GvisorInstance container = runtime.instances().own(instance);
        try {
            runtime.runsc().pause(container.record().files(), container.record().containerId());
        } catch (IOException e) {
            throw ApiException.internal("cannot pause sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        container.paused(true);
    }

    /** {@code runsc resume}; of a container a failed checkpoint left frozen, its agent is woken too. */
    @Override
    public void resume(SandboxInstance instance) {
        GvisorInstance container = runtime.instances().own(instance);
        ContainerRecord record = container.record();
        try {
            if (Files.exists(record.files().checkpointing())) {
                runtime.checkpointer().runOnAfterCheckpoint(record);
                container.paused(false);
                // the agent binds its socket again a moment after SIGUSR2: the caller's next exec must find it listening
                Instant deadline = Instant.now().plus(runtime.settings().startTimeout());
                container.awaitAgent(deadline, OperationContext.until(deadline));
            } else {
                runtime.runsc().resume(record.files(), record.containerId());
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot resume sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        container.paused(false);
    }
}
