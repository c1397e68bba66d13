package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The cold tier (docs/tiers.md): an idle instance's whole state written to disk and its memory
 * freed, then brought back as it was by the next request that needs it. An optional seam: the
 * backend's bundle registers it as a service of its own with the backend's
 * {@value SandboxBackend#NAME_PROPERTY}, and core derives {@link io.vivarium.api.Capability#HIBERNATE}
 * from it. In three steps, so that a daemon killed at any point leaves the sandbox either as it was
 * or wholly cold: {@link #save} (the instance goes on as it was), core records the state it returns,
 * then {@link #release}. {@link SandboxBackend#adopt} of that state gives the cold instance back,
 * ending whatever of the instance is still running. Core calls each alone on the instance, never on
 * one whose backend reports {@link io.vivarium.api.Capability#VOLUME_DISKS} while it mounts a
 * volume writable. Since 2.10.
 */
@ConsumerType
public interface Hibernation {

    /**
     * Writes the whole state of a paused instance to disk (core pauses it through the backend's
     * {@link PauseControl} first, so nothing it does after the state was taken is lost) and returns
     * the state to record for it cold; the instance stays paused and can be resumed. A failure
     * changes nothing core knows of.
     */
    InstanceState save(SandboxInstance instance, OperationContext context);

    /**
     * Ends what runs of an instance {@link #save} saved, freeing its memory, and returns the cold
     * instance: {@link io.vivarium.api.SandboxStatus#PAUSED}, {@link SandboxInstance#alive()}, its
     * {@link SandboxInstance#state()} the saved one, its channel refusing until {@link #wake}.
     */
    SandboxInstance release(SandboxInstance instance, InstanceState saved);

    /**
     * Brings a cold instance back as it was saved, running; the instance returned has its new state.
     * A failure leaves it cold, whatever the wake started ended (core answers 503: retry, or delete it).
     */
    SandboxInstance wake(SandboxInstance cold, OperationContext context);

    /** Whether {@code instance} is a cold one ({@link #release}, or adopted from a saved state). */
    boolean cold(SandboxInstance instance);

    /**
     * Core recorded {@code woken} as running again ({@link #wake}): what its cold state held on
     * disk may go, since no adoption will look for it again. Until then it must stay, for a daemon
     * killed before that record adopts the cold state. Since 2.11; by default the state stays until
     * the next {@link #save} or the destroy.
     */
    default void discardSaved(SandboxInstance woken) {
    }
}
