package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * An instance that can be shut down on purpose, its disk kept, and started again (a VM). An
 * optional capability a {@link SandboxInstance} implements; core finds it with {@code instanceof}.
 * Core persists the status after each call, so a daemon restart keeps a stopped instance stopped:
 * {@link SandboxBackend#adopt} is then handed the state {@link #stop} returned and must answer with
 * a stopped instance, not {@link InstanceGoneException}. Since 1.3.
 */
@ConsumerType
public interface PowerControl {

    /**
     * Shuts the instance down (gracefully where the guest cooperates, within the context's
     * deadline, then forcibly); returns the stopped instance, whose state core persists.
     */
    SandboxInstance stop(OperationContext context);

    /** Boots a stopped instance again from its disk; returns the running instance, whose state core persists. */
    SandboxInstance start(OperationContext context);
}
