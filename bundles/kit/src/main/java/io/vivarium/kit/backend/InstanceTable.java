package io.vivarium.kit.backend;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import io.vivarium.api.spi.SandboxInstance;

/**
 * The instances one revision of a backend created or adopted, by sandbox id: what its seams are
 * handed back, and what it lets go of when it deactivates. Letting go means {@link AutoCloseable#close()}
 * on the instance, which must only drop this revision's hold on it (connections, threads); the
 * instance itself keeps running for the next revision to adopt. Safe for concurrent use.
 *
 * @param <T> the backend's own instance type
 */
public final class InstanceTable<T extends SandboxInstance & AutoCloseable> {

    private static final System.Logger LOG = System.getLogger(InstanceTable.class.getName());

    private final Class<T> type;
    private final String backend;
    private final ConcurrentMap<String, T> byId = new ConcurrentHashMap<>();

    /**
     * @param type the backend's instance class, which {@link #own} checks
     * @param backend the backend's name, for messages
     */
    public InstanceTable(Class<T> type, String backend) {
        this.type = type;
        this.backend = backend;
    }

    /** Records {@code instance} under its id, letting go of another one it replaces (a relaunch, a second adoption); returns it. */
    public T put(T instance) {
        T replaced = byId.put(instance.id(), instance);
        if (replaced != null && replaced != instance) {
            letGo(replaced);
        }
        return instance;
    }

    public Optional<T> get(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    /** Forgets the instance of {@code id} and lets go of it (its destroy); empty if there was none. */
    public Optional<T> remove(String id) {
        T removed = byId.remove(id);
        if (removed != null) {
            letGo(removed);
        }
        return Optional.ofNullable(removed);
    }

    /** The instances recorded now. */
    public Collection<T> all() {
        return List.copyOf(byId.values());
    }

    /** Lets go of every instance (the revision is deactivating); they keep running. */
    public void letGoOfAll() {
        for (T instance : new ArrayList<>(byId.values())) {
            byId.remove(instance.id(), instance);
            letGo(instance);
        }
    }

    /**
     * {@code instance} as this backend's own type: what a seam does first with the instance core
     * hands it. Throws {@link IllegalArgumentException} for another backend's instance or another
     * revision's (its class is another class loader's), which core never hands over.
     */
    public T own(SandboxInstance instance) {
        if (!type.isInstance(instance)) {
            throw new IllegalArgumentException("not an instance of this " + backend + " backend: "
                    + (instance == null ? "null" : instance.getClass().getName() + " of " + instance.getClass().getClassLoader()));
        }
        return type.cast(instance);
    }

    private void letGo(T instance) {
        try {
            instance.close();
        } catch (Exception e) {
            LOG.log(Level.WARNING, "cannot let go of " + backend + " instance " + instance.id() + ": " + e.getMessage(), e);
        }
    }
}
