package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.state.StateStoreProvider;

/**
 * Binds sandboxes to their backend whenever it registers: at start-up and after a bundle update,
 * every recorded sandbox of that backend is re-adopted; when it leaves, its instances are
 * detached (never killed), those whose channel outlives it kept for guest calls until the next
 * revision adopts them or the patience is over. One lock orders these against each other and
 * against a create publishing its instance.
 */
final class Adoption {
    private static final System.Logger LOG = System.getLogger(Adoption.class.getName());

    private final Object reconcile = new Object();
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    /** Called for each sandbox adopted, outside the adoption lock: finishes what a crash cut short. */
    private volatile Consumer<Sandbox> afterAdoption = sb -> {
    };
    private volatile Duration leavingPatience = Duration.ZERO;

    Adoption(BackendRegistry registry, Sandboxes sandboxes) {
        this.registry = registry;
        this.sandboxes = sandboxes;
    }

    void afterAdoption(Consumer<Sandbox> hook) {
        afterAdoption = hook;
    }

    /** Loads the records and adopts the sandboxes of every backend already registered. */
    void start(Path stateDir, StateStoreProvider stores, String storeName) throws IOException {
        List<Sandbox> adopted = new ArrayList<>();
        synchronized (reconcile) {
            sandboxes.open(stateDir, stores, storeName);
            for (BackendRegistry.Entry e : registry.all()) {
                adopted.addAll(adoptAll(e));
            }
        }
        adopted.forEach(afterAdoption);
    }

    void stop() {
        synchronized (reconcile) {
            sandboxes.close();
        }
    }

    /**
     * Publishes the backend, then adopts its sandboxes one by one. A request for a sandbox that
     * the sweep has not reached yet adopts that one itself ({@link #adoptIfDetached}), so after an
     * upgrade a request waits for its own sandbox's adoption, not for every sandbox's.
     */
    void backendArrived(BackendRegistry.Entry arrived) {
        List<Sandbox> adopted = List.of();
        synchronized (reconcile) {
            BackendRegistry.Entry entry = registry.add(arrived);
            if (sandboxes.open()) {
                adopted = adoptAll(entry);
            }
        }
        adopted.forEach(afterAdoption);
    }

    /**
     * Keeps an instance whose channel outlives its backend for guest calls (see
     * {@link LiveInstances#forChannel}) up to {@code patience} after its backend left.
     */
    void keepLeavingInstancesFor(Duration patience) {
        leavingPatience = patience;
    }

    void backendLeft(long serviceId) {
        List<Sandbox> keeping = new ArrayList<>();
        synchronized (reconcile) {
            registry.remove(serviceId);
            for (Sandbox sb : sandboxes.all()) {
                if (sb.detachFrom(serviceId)) {
                    keeping.add(sb);
                }
            }
        }
        if (!keeping.isEmpty()) {
            // a backend that does not come back must not pin its old revision through them
            Duration patience = leavingPatience;
            Thread.ofVirtual().name("vivarium-leaving-" + serviceId).start(() -> {
                try {
                    Thread.sleep(patience);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                keeping.forEach(sb -> sb.forgetLeaving(serviceId));
            });
        }
    }

    /**
     * Attaches a just-created instance if its backend is still the one registered; if it left
     * during the create, the next one to arrive adopts the recorded instance instead.
     */
    void attachIfCurrent(Sandbox sb, SandboxInstance instance, BackendRegistry.Entry e) {
        // backendLeft unregisters before it detaches: either it detaches this attach or this sees it gone
        sb.attach(instance, e.serviceId());
        if (registry.get(e.name()).filter(now -> now.serviceId() == e.serviceId()).isEmpty()) {
            // the backend's leaving already ran: nothing would let go of an instance kept now
            sb.detachFrom(e.serviceId(), false);
        }
    }

    /**
     * Adopts the sandbox's instance from its backend, if registered, unless a request or the sweep
     * did already; runs what a crash cut short for a sandbox this call adopted. For a request that
     * reaches its sandbox before the sweep does.
     *
     * @return whether the sandbox's backend is registered (else there was nothing to adopt from)
     */
    boolean adoptOnDemand(Sandbox sb) {
        Optional<BackendRegistry.Entry> e = registry.get(sb.record().backend());
        if (e.isPresent() && adoptIfDetached(sb, e.get())) {
            afterAdoption.accept(sb);
        }
        return e.isPresent();
    }

    /** The sandboxes of {@code e} now attached to one of its instances. */
    private List<Sandbox> adoptAll(BackendRegistry.Entry e) {
        List<Sandbox> adopted = new ArrayList<>();
        for (Sandbox sb : sandboxes.all()) {
            if (sb.record().backend().equals(e.name()) && adoptIfDetached(sb, e)) {
                adopted.add(sb);
            }
        }
        return adopted;
    }

    /** Whether this call attached an instance of {@code e}: not if a request or the sweep did already. */
    private boolean adoptIfDetached(Sandbox sb, BackendRegistry.Entry e) {
        sb.lifecycle.lock();
        try {
            if (sb.deleted() || sb.attachedTo(e.serviceId())) {
                return false;
            }
            adopt(sb, e);
            return sb.attachedTo(e.serviceId());
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }

    private void adopt(Sandbox sb, BackendRegistry.Entry e) {
        SandboxRecord r = sb.record();
        InstanceSpec spec = sb.spec(sandboxes.dirs());
        if (SandboxRecord.CREATING.equals(r.phase())) {
            LOG.log(Level.WARNING, "sandbox " + r.id() + " was being created when the daemon stopped; removing it");
            e.backend().destroy(spec, emptyState());
            sandboxes.forget(sb, true);
            return;
        }
        if (r.status() == SandboxStatus.FAILED) {
            return;
        }
        try {
            attachIfCurrent(sb, e.backend().adopt(spec, r.state()), e);
        } catch (InstanceGoneException gone) {
            sandboxes.fail(sb, "found dead when " + e.name() + " " + e.version() + " re-adopted it: " + gone.getMessage());
        } catch (RuntimeException ex) {
            LOG.log(Level.ERROR, "adopting sandbox " + r.id() + " failed", ex);
            sandboxes.fail(sb, "could not be re-adopted by " + e.name() + " " + e.version() + ": " + ex.getMessage());
        }
    }

    static InstanceState emptyState() {
        return new InstanceState(0, Map.of());
    }
}
