package io.vivarium.api.spi;

import java.util.Optional;

import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxStatus;

import org.osgi.annotation.versioning.ConsumerType;

/** A running instance a backend created or adopted. */
@ConsumerType
public interface SandboxInstance {

    String id();

    /** What to persist so that {@link SandboxBackend#adopt} can find this instance again. */
    InstanceState state();

    /** True while the instance's processes are running. Cheap: called on every request. */
    boolean alive();

    /**
     * Where the instance stands, for an instance that can be more than running or dead: a VM
     * shut down on purpose is {@link SandboxStatus#STOPPED}, one that crashed is
     * {@link SandboxStatus#FAILED}. Cheap: called on every listing. By default {@code RUNNING}
     * while {@link #alive()}, else {@code FAILED}. Since 1.3.
     */
    default SandboxStatus status() {
        return alive() ? SandboxStatus.RUNNING : SandboxStatus.FAILED;
    }

    /**
     * Why the instance is not running (what the backend saw: an exit, a guest panic, a power-off),
     * or null when it does not know or the instance runs. Since 1.3.
     */
    default String reason() {
        return null;
    }

    GuestChannel channel();

    /**
     * Whether {@link #channel()} keeps working after the backend service that made this instance
     * has unregistered (its bundle being updated): core then serves exec, ping, files and eval
     * through it until the backend's next revision adopts the sandbox, instead of holding them
     * until then. A backend says so only when its channel reaches the guest by itself (connects
     * per call once its revision left) and never reaches into the backend's other state; core lets
     * go of the instance once the next revision adopts the sandbox, or after its patience. By
     * default false: requests wait for the next revision. Since 1.3.
     */
    default boolean channelOutlivesBackend() {
        return false;
    }

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

    /**
     * The IPv4 address at which the host reaches servers the sandbox runs (its end of an
     * {@code egress} network), for exposed ports; empty when it has none (mode {@code none}, or a
     * backend without networks). Since 2.8.
     */
    default Optional<String> networkAddress() {
        return Optional.empty();
    }
}
