package io.vivarium.core.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.SandboxBackend;

/**
 * The backends registered right now, by name, and the optional seams their bundles registered.
 * Fed by the component's dynamic references; readers may wait a bounded time for a backend that is
 * away (being upgraded) to come back.
 */
final class BackendRegistry {

    /**
     * A registered backend, the bundle that provides it, and through {@link #seam} the optional
     * seams that bundle registered under its name.
     */
    record Entry(String name, SandboxBackend backend, String bundle, String version, long serviceId, long bundleId,
            BackendSeams seams) {

        /** An entry of a backend alone in its bundle (whose id is taken to be {@code serviceId}), before it is added. */
        Entry(String name, SandboxBackend backend, String bundle, String version, long serviceId) {
            this(name, backend, bundle, version, serviceId, serviceId, new BackendSeams());
        }

        /** The seam of {@code type} this backend's bundle registered under its name, if any. */
        <T> Optional<T> seam(Class<T> type) {
            return seams.find(name, bundleId, type);
        }

        /** The seam of {@code type}, or a 501 saying this backend cannot do {@code what}. */
        <T> T require(Class<T> type, String what) {
            return seam(type).orElseThrow(() -> ApiException.notImplemented("backend " + name + " cannot " + what));
        }

        /** What the backend can do: {@link BackendCapabilities#of}. */
        List<String> capabilities() {
            return BackendCapabilities.of(this);
        }
    }

    private final BackendSeams seams;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, Entry> byName = new HashMap<>();

    BackendRegistry(BackendSeams seams) {
        this.seams = seams;
    }

    /** The optional seams registered beside the backends. */
    BackendSeams seams() {
        return seams;
    }

    /** An entry for a backend service, its seams looked up in this registry's table. */
    Entry entry(String name, SandboxBackend backend, String bundle, String version, long serviceId, long bundleId) {
        return new Entry(name, backend, bundle, version, serviceId, bundleId, seams);
    }

    /** Registers {@code entry}, its seams looked up in this registry's table from now on; returns it so. */
    Entry add(Entry entry) {
        Entry here = entry.seams() == seams ? entry : new Entry(entry.name(), entry.backend(), entry.bundle(),
                entry.version(), entry.serviceId(), entry.bundleId(), seams);
        lock.lock();
        try {
            byName.put(here.name(), here);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        return here;
    }

    /** Removes the entry only if it is still the one registered under its service id. */
    boolean remove(long serviceId) {
        lock.lock();
        try {
            return byName.values().removeIf(e -> e.serviceId() == serviceId);
        } finally {
            lock.unlock();
        }
    }

    /** The registered backend of {@code sb}, or 503 with Retry-After while it is away (being upgraded). */
    Entry of(Sandbox sb) {
        return get(sb.record().backend()).orElseThrow(() -> ApiException.unavailable("backend " + sb.record().backend()
                + " of sandbox " + sb.record().id() + " is not available right now; retry shortly", 2));
    }

    Optional<Entry> get(String name) {
        lock.lock();
        try {
            return Optional.ofNullable(byName.get(name));
        } finally {
            lock.unlock();
        }
    }

    /** The backend named {@code name}, waiting up to {@code patience} for it to (re)appear. */
    Optional<Entry> await(String name, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        lock.lock();
        try {
            while (true) {
                Entry e = byName.get(name);
                if (e != null) {
                    return Optional.of(e);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } finally {
            lock.unlock();
        }
    }

    /** Every registered backend, waiting up to {@code patience} for a first one if there is none yet. */
    List<Entry> awaitAny(Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        lock.lock();
        try {
            long left;
            while (byName.isEmpty() && (left = deadline - System.nanoTime()) > 0) {
                changed.awaitNanos(left);
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
        return all();
    }

    List<Entry> all() {
        lock.lock();
        try {
            List<Entry> list = new ArrayList<>(byName.values());
            list.sort(Comparator.comparing(Entry::name));
            return list;
        } finally {
            lock.unlock();
        }
    }
}
