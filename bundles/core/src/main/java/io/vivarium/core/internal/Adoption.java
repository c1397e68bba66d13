package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Map;

import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

/**
 * Binds sandboxes to their backend whenever it registers: at start-up and after a bundle update,
 * every recorded sandbox of that backend is re-adopted; when it leaves, its instances are
 * forgotten (never killed). One lock orders these against each other and against a create
 * publishing its instance.
 */
final class Adoption {
    private static final System.Logger LOG = System.getLogger(Adoption.class.getName());

    private final Object reconcile = new Object();
    private final BackendRegistry registry;
    private final Sandboxes sandboxes;

    Adoption(BackendRegistry registry, Sandboxes sandboxes) {
        this.registry = registry;
        this.sandboxes = sandboxes;
    }

    /** Loads the records and adopts the sandboxes of every backend already registered. */
    void start(Path stateDir) throws IOException {
        synchronized (reconcile) {
            sandboxes.open(stateDir);
            for (BackendRegistry.Entry e : registry.all()) {
                adoptAll(e);
            }
        }
    }

    void stop() {
        synchronized (reconcile) {
            sandboxes.close();
        }
    }

    void backendArrived(BackendRegistry.Entry entry) {
        synchronized (reconcile) {
            if (sandboxes.open()) {
                adoptAll(entry);
            }
            // published after adoption, so a request waiting for the backend finds its sandbox attached
            registry.add(entry);
        }
    }

    void backendLeft(long serviceId) {
        synchronized (reconcile) {
            registry.remove(serviceId);
            sandboxes.all().forEach(sb -> sb.detachFrom(serviceId));
        }
    }

    /**
     * Attaches a just-created instance if its backend is still the one registered; if it left
     * during the create, the next one to arrive adopts the recorded instance instead.
     */
    void attachIfCurrent(Sandbox sb, SandboxInstance instance, BackendRegistry.Entry e) {
        synchronized (reconcile) {
            if (registry.get(e.name()).filter(now -> now.serviceId() == e.serviceId()).isPresent()) {
                sb.attach(instance, e.serviceId());
            }
        }
    }

    private void adoptAll(BackendRegistry.Entry e) {
        for (Sandbox sb : sandboxes.all()) {
            if (!sb.record().backend().equals(e.name())) {
                continue;
            }
            sb.lifecycle.lock();
            try {
                if (!sb.deleted()) {
                    adopt(sb, e);
                }
            } finally {
                sb.lifecycle.unlock(sandboxes.observer());
            }
        }
    }

    private void adopt(Sandbox sb, BackendRegistry.Entry e) {
        SandboxRecord r = sb.record();
        InstanceSpec spec = sb.spec(sandboxes.store());
        if (SandboxRecord.CREATING.equals(r.phase())) {
            LOG.log(Level.WARNING, "sandbox " + r.id() + " was being created when the daemon stopped; removing it");
            e.backend().destroy(spec, emptyState());
            sandboxes.forget(sb);
            return;
        }
        if (r.status() == SandboxStatus.FAILED) {
            return;
        }
        try {
            sb.attach(e.backend().adopt(spec, r.state()), e.serviceId());
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
