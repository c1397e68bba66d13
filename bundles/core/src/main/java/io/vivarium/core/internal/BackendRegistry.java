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

import io.vivarium.api.spi.SandboxBackend;

/**
 * The backends registered right now, by name. Fed by the component's dynamic reference; readers
 * may wait a bounded time for a backend that is away (being upgraded) to come back.
 */
final class BackendRegistry {

    /** A registered backend and the bundle that provides it. */
    record Entry(String name, SandboxBackend backend, String bundle, String version, long serviceId) {
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, Entry> byName = new HashMap<>();

    void add(Entry entry) {
        lock.lock();
        try {
            byName.put(entry.name(), entry);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
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
