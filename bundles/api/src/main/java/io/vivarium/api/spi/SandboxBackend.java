package io.vivarium.api.spi;

import java.util.Map;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A hypervisor or sandboxing technology. Register one OSGi service per backend with the service
 * property {@value #NAME_PROPERTY} set to {@link #name()}; core discovers backends dynamically and
 * never refers to one by name in code.
 *
 * <h2>What a backend can do is said once</h2>
 * The lifecycle here (create, adopt, destroy) is all a backend must implement. Everything else is
 * an <b>optional seam</b>: a service of its own that the backend's bundle registers under the same
 * {@value #NAME_PROPERTY}, which core finds by that name (never on this object): {@link Images},
 * {@link Checkpoints}, {@link PowerControl}, {@link PauseControl}, {@link ScratchRuns}. The
 * capabilities {@code GET /v1/backends} lists are derived from the seams registered, from
 * {@link #machine()}, and from the few facts only the backend knows on its host, which
 * {@link #capabilities()} reports ({@link Capability#REPORTED}). Register the seams before this
 * service (a static reference of this component to each of them does it), so that core never sees
 * the backend without them.
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
 * <li>A seam is handed only instances this backend's current revision created or adopted.</li>
 * </ul>
 */
@ConsumerType
public interface SandboxBackend {

    /** Service property naming the backend, e.g. {@code vivarium.backend=procbox}; the optional seams carry it too. */
    String NAME_PROPERTY = "vivarium.backend";

    /** {@link #details()} key: the accelerator chosen and why, e.g. {@code "tcg (the CPU has no vmx/svm)"}. */
    String DETAIL_ACCELERATOR = "accelerator";
    /** {@link #details()} key: the platform or machine, e.g. {@code "ptrace"} for gVisor, {@code "microvm"}. */
    String DETAIL_PLATFORM = "platform";
    /** {@link #details()} key: how the daemon reaches inside an instance, e.g. {@code "vivarium-agent"}. */
    String DETAIL_AGENT = "agent";
    /** {@link #details()} key: what isolates an instance, e.g. {@code "bubblewrap 0.8.0"}. */
    String DETAIL_ISOLATION = "isolation";

    String name();

    /**
     * What this backend can do on this host that no seam says: names of {@link Capability#REPORTED}
     * (e.g. {@link Capability#MEMORY_LIMIT} only where a memory cgroup is writable) and names of
     * its own ({@link Capability#NAME}). Core adds what it derives and ignores derived names
     * reported here. Cheap: called on every listing and create. Since 2.0.
     */
    Set<String> capabilities();

    /**
     * Whether instances are machines: VMs with virtual CPUs, which honour
     * {@link InstanceSpec#vcpus()} and which {@code /v1/vms} shows. False by default. Since 2.0.
     */
    /**
     * {@link #destroy}, for a caller that asked for it to happen now ({@code DELETE ...?force=true}):
     * without the steps that need the instance's cooperation to keep data it still holds (a VM's
     * freeze of its writable volumes, so what its guest had not written back is lost), for an
     * instance that cannot cooperate (a guest that does not answer). By default {@link #destroy}.
     * Since 2.10.
     */
    default void destroyForcibly(InstanceSpec spec, InstanceState state) {
        destroy(spec, state);
    }

    default boolean machine() {
        return false;
    }

    /**
     * Whether {@code POST /v1/sandboxes} may create instances of this backend. False for a backend
     * of plain machines alone (a {@link #machine()} one whose instances are VMs to run, not
     * sandboxes to exec in, fork or dry-run): core then creates them only through {@code /v1/vms}
     * and answers a sandbox create that names it (or a template of it) with a 400 saying so. True by
     * default. Since 2.14.
     */
    default boolean sandboxes() {
        return true;
    }

    Availability availability();

    /**
     * What a person needs to know about how this backend runs on this host, shown beside
     * {@link #availability()} in {@code GET /v1/backends}: the {@code DETAIL_*} keys where they
     * apply, plus any of the backend's own. Cheap: called on every listing.
     */
    default Map<String, String> details() {
        return Map.of();
    }

    /**
     * The kinds of artifact {@link #create} stores through the {@link StorageStrategies} it is
     * handed (a VM's disk): core reports the backend unavailable, saying which, while no installed
     * strategy handles one of them. Empty by default. Since 2.0.
     */
    default Set<ArtifactKind> storedKinds() {
        return Set.of();
    }

    /**
     * Creates and starts an instance. Stop early when {@code context} is cancelled or past its
     * deadline, undoing what was made, and report progress through it. Store artifacts (a VM's
     * disk) through {@code storage}, the strategies core chooses from, as {@link Images} does.
     * Throws {@link ApiException} (4xx for bad specs, 503 when the host lacks something) rather
     * than leaving a half-made instance behind. Since 2.0 (one method, with storage and context).
     */
    SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context);

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
}
