package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Shutting an instance down on purpose, its disk kept, and starting it again (a VM). An optional
 * seam: the backend's bundle registers it as a service of its own with the backend's
 * {@value SandboxBackend#NAME_PROPERTY}, and core derives {@link io.vivarium.api.Capability#STOP_START}
 * from it. Core persists the status after each call, so a daemon restart keeps a stopped instance
 * stopped: {@link SandboxBackend#adopt} is then handed the state {@link #stop} returned and must
 * answer with a stopped instance, not {@link InstanceGoneException}. Since 1.3; a service taking the
 * instance since 2.0.
 */
@ConsumerType
public interface PowerControl {

    /**
     * Shuts the instance down (gracefully where the guest cooperates, within the context's
     * deadline, then forcibly); returns the stopped instance, whose state core persists.
     */
    SandboxInstance stop(SandboxInstance instance, OperationContext context);

    /** Boots a stopped instance again from its disk; returns the running instance, whose state core persists. */
    SandboxInstance start(SandboxInstance instance, OperationContext context);
}
