package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/** A running instance a backend created or adopted. */
@ConsumerType
public interface SandboxInstance {

    String id();

    /** What to persist so that {@link SandboxBackend#adopt} can find this instance again. */
    InstanceState state();

    /** True while the instance's processes are running. Cheap: called on every request. */
    boolean alive();

    GuestChannel channel();

    /** Path of the writable workspace as the sandbox sees it, e.g. {@code /work}. */
    String workspace();
}
