package io.vivarium.api.spi;

import java.util.Optional;

import io.vivarium.api.ResourceUsage;

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

    /**
     * Where the workspace lives on the host, if it does (a process sandbox's does, a VM's disk
     * does not): core then lists files there instead of running a listing command in the guest.
     */
    default Optional<HostFiles> hostFiles() {
        return Optional.empty();
    }

    /**
     * What the instance uses on the host right now (memory, CPU time, disk), for operators and
     * metrics; empty when the backend does not measure it. Called on demand, not on every request;
     * may take a few milliseconds. Since 1.2.
     */
    default Optional<ResourceUsage> usage() {
        return Optional.empty();
    }
}
