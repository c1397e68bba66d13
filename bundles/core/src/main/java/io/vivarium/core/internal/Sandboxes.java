package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxInstance;

/**
 * The sandboxes core knows of, in memory and as records on disk: finding one for a caller (another
 * tenant's is not found), and writing, failing and forgetting their records.
 */
final class Sandboxes {
    private static final System.Logger LOG = System.getLogger(Sandboxes.class.getName());

    private final Map<String, Sandbox> byId = new ConcurrentHashMap<>();
    private final Supplier<RuntimeObserver> observer;
    private volatile SandboxStore store;

    Sandboxes(Supplier<RuntimeObserver> observer) {
        this.observer = observer;
    }

    /** Loads every readable record under {@code stateDir}; callers hold the adoption lock. */
    void open(Path stateDir) throws IOException {
        store = new SandboxStore(stateDir);
        for (SandboxRecord r : store.loadAll((file, e) -> LOG.log(Level.ERROR,
                "cannot read sandbox record " + file + "; leaving it alone: " + e))) {
            byId.put(r.id(), new Sandbox(r));
        }
    }

    void close() {
        byId.clear();
        store = null;
    }

    boolean open() {
        return store != null;
    }

    SandboxStore store() {
        return store;
    }

    RuntimeObserver observer() {
        return observer.get();
    }

    int size() {
        return byId.size();
    }

    Collection<Sandbox> all() {
        return byId.values();
    }

    void add(Sandbox sb) {
        byId.put(sb.record().id(), sb);
    }

    Sandbox find(Caller caller, String id) {
        SandboxIds.check(id);
        Sandbox sb = byId.get(id);
        if (sb == null || sb.deleted() || !sb.record().tenant().equals(caller.tenant())) {
            throw notFound(id);
        }
        return sb;
    }

    static ApiException notFound(String id) {
        return ApiException.notFound("no sandbox " + id);
    }

    List<SandboxInfo> list(Caller caller) {
        return byId.values().stream()
                .filter(sb -> sb.record().tenant().equals(caller.tenant()))
                .map(Sandbox::info)
                .sorted(ORDER)
                .toList();
    }

    static final Comparator<SandboxInfo> ORDER = Comparator.comparingLong(SandboxInfo::createdAtUnix)
            .thenComparing(SandboxInfo::id);

    void persist(SandboxRecord r) throws IOException {
        long start = System.nanoTime();
        store.save(r);
        observer().stateWritten(System.nanoTime() - start);
    }

    /** Marks the sandbox failed, in memory and on disk; callers hold its lifecycle lock. */
    void fail(Sandbox sb, String why) {
        SandboxRecord failed = sb.record().failed(why);
        sb.record(failed);
        sb.attach(null, -1);
        try {
            persist(failed);
        } catch (IOException io) {
            LOG.log(Level.ERROR, "cannot persist failure of sandbox " + failed.id(), io);
        }
        LOG.log(Level.WARNING, "sandbox " + failed.id() + " " + why);
    }

    /**
     * Records what a restore, stop or start left running: {@code after}'s state and
     * {@code status}, written before anyone is told, and {@code after} in place of {@code before}.
     */
    void replace(Sandbox sb, SandboxInstance before, SandboxInstance after, SandboxStatus status) {
        sb.lifecycle.lock();
        try {
            if (sb.deleted()) {
                return;
            }
            SandboxRecord r = sb.record().with(after.state(), status);
            try {
                persist(r);
            } catch (IOException io) {
                throw ApiException.internal("cannot persist the new state of sandbox " + r.id()
                        + "; a daemon restart may not find it again", io);
            }
            sb.record(r);
            sb.replace(before, after);
        } finally {
            sb.lifecycle.unlock(observer());
        }
    }

    void forget(Sandbox sb) {
        sb.markDeleted();
        byId.remove(sb.record().id());
        try {
            store.remove(sb.record().id());
        } catch (IOException io) {
            LOG.log(Level.ERROR, "cannot remove files of sandbox " + sb.record().id(), io);
        }
    }
}
