package io.vivarium.api.spi;

import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A hypervisor or sandboxing technology. Register one OSGi service per backend with the service
 * property {@value #NAME_PROPERTY} set to {@link #name()}; core discovers backends dynamically and
 * never refers to one by name in code.
 *
 * <h2>Lifecycle rules</h2>
 * <ul>
 * <li><b>Never kill instances on deactivation.</b> A bundle update or a daemon restart must leave
 * them running; the next activation (possibly of a newer bundle version) is handed every
 * persisted {@link InstanceState} through {@link #adopt} and re-attaches to it.</li>
 * <li><b>Unavailable is not an error.</b> If the host lacks what the backend needs, activate
 * anyway and report it through {@link #availability()}.</li>
 * <li>Core serialises {@link #create}, {@link #adopt} and {@link #destroy} per instance, and
 * persists the returned state atomically before it reports the instance to a caller.</li>
 * </ul>
 *
 * <p>Optional operations (snapshot, restore, fork, pause, dry-run) are advertised through
 * {@link Capabilities} and default to {@link ApiException} 501.
 */
@ConsumerType
public interface SandboxBackend {

    /** Service property naming the backend, e.g. {@code vivarium.backend=procbox}. */
    String NAME_PROPERTY = "vivarium.backend";

    /** {@link #details()} key: the accelerator chosen and why, e.g. {@code "tcg (the CPU has no vmx/svm)"}. Since 1.2. */
    String DETAIL_ACCELERATOR = "accelerator";
    /** {@link #details()} key: the platform or machine, e.g. {@code "ptrace"} for gVisor, {@code "microvm"}. Since 1.2. */
    String DETAIL_PLATFORM = "platform";
    /** {@link #details()} key: how the daemon reaches inside an instance, e.g. {@code "nsenter"}, {@code "vivarium-agent"}. Since 1.2. */
    String DETAIL_AGENT = "agent";
    /** {@link #details()} key: what isolates an instance, e.g. {@code "bubblewrap 0.8.0"}. Since 1.2. */
    String DETAIL_ISOLATION = "isolation";

    String name();

    Capabilities capabilities();

    Availability availability();

    /**
     * Creates and starts an instance. Throws {@link ApiException} (4xx for bad specs, 503 when the
     * host lacks something) rather than leaving a half-made instance behind.
     */
    SandboxInstance create(InstanceSpec spec);

    /**
     * Like {@link #create(InstanceSpec)}, for a call that may take long (a VM boot): stop early when
     * {@code context} is cancelled or past its deadline, undoing what was made, and report progress
     * through it. Core calls this one. By default ignores the context. Since 1.2.
     */
    default SandboxInstance create(InstanceSpec spec, OperationContext context) {
        return create(spec);
    }

    /**
     * What a person needs to know about how this backend runs on this host, shown beside
     * {@link #availability()} in {@code GET /v1/backends}: the {@code DETAIL_*} keys where they
     * apply, plus any of the backend's own. Cheap: called on every listing. Since 1.2.
     */
    default Map<String, String> details() {
        return Map.of();
    }

    /**
     * Re-attaches to an instance from the state {@link SandboxInstance#state()} returned earlier.
     * Throws {@link InstanceGoneException} if it is no longer running.
     */
    SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException;

    /**
     * Stops the instance and releases what it holds on the host. Idempotent. {@code state} is
     * empty ({@code pid} 0, no data) when the daemon died in the middle of {@link #create}: find
     * whatever was left from {@code spec.dir()}.
     */
    void destroy(InstanceSpec spec, InstanceState state);

    /** Pauses every process of the instance. */
    default void pause(SandboxInstance instance) {
        throw ApiException.notImplemented(name() + " cannot pause instances");
    }

    default void resume(SandboxInstance instance) {
        throw ApiException.notImplemented(name() + " cannot resume instances");
    }

    /**
     * Runs {@code request} against a throwaway copy-on-write view of the instance's workspace (the
     * instance itself is never changed) and returns it for comparison; core closes it to discard the
     * effects. Advertised by {@link Capabilities#dryRun()}. A command that fails or times out still
     * returns a run that can be discarded.
     */
    default ScratchRun dryRun(SandboxInstance instance, ExecRequest request) {
        throw ApiException.notImplemented(name() + " cannot dry-run commands");
    }

    /** Saves the instance's state (memory and disk, or workspace) under a tag. */
    default void snapshot(SandboxInstance instance, String tag) {
        throw ApiException.notImplemented(name() + " cannot snapshot instances");
    }

    /**
     * Returns the instance to a tagged state: in place if {@link Capabilities#restoreInPlace()},
     * otherwise by relaunch, in which case the returned instance has a new state to persist.
     */
    default SandboxInstance restore(SandboxInstance instance, String tag) {
        throw ApiException.notImplemented(name() + " cannot restore instances");
    }
}
