package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Freezing every process of an instance (a VM's virtual CPUs), its memory kept, and thawing it.
 * An optional seam: the backend's bundle registers it as a service of its own with the backend's
 * {@value SandboxBackend#NAME_PROPERTY}, and core derives {@link io.vivarium.api.Capability#PAUSE}
 * from it. The paused state is the instance's own ({@link SandboxInstance#status()} answers
 * {@link io.vivarium.api.SandboxStatus#PAUSED}), so that a pause that outlives the daemon is found
 * again by the next one. Core calls {@link #pause} only on a running instance and {@link #resume}
 * only on a paused one, each alone on it. Since 2.0 (methods of the backend before).
 */
@ConsumerType
public interface PauseControl {

    /** Freezes every process of the instance. */
    void pause(SandboxInstance instance);

    /** Runs a paused instance again. */
    void resume(SandboxInstance instance);
}
