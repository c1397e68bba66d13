package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.state.NodeId;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

/**
 * The sandboxes core knows of, in memory and as records in the {@link StateStore}: finding one for a
 * caller (another tenant's is not found), and writing, failing and forgetting their records.
 */
final class Sandboxes {
    private static final System.Logger LOG = System.getLogger(Sandboxes.class.getName());

    private final Map<String, Sandbox> byId = new ConcurrentHashMap<>();
    /** Records of creates undone while the store was away: removed by the next write that gets through. */
    private final Set<String> undoneCreates = ConcurrentHashMap.newKeySet();
    /** The store's name and whether it answered, as last told: for an observer that arrives later. */
    private volatile Map.Entry<String, Boolean> storeHealth;
    private final Supplier<RuntimeObserver> observer;
    private volatile StateStore state;
    private volatile SandboxDirs dirs;
    /** What is told of each sandbox forgotten, after its record and before its directory goes. */
    private volatile Consumer<SandboxRecord> onForget = r -> { };

    Sandboxes(Supplier<RuntimeObserver> observer) {
        this.observer = observer;
    }

    /** Tells {@code hook} of every sandbox forgotten from now on (its volumes are released there). */
    void onForget(Consumer<SandboxRecord> hook) {
        onForget = hook;
    }

    /**
     * Opens this node's store (whichever the operator chose) and takes this node's sandboxes from
     * it; directories without a record (a create cut short before it) are removed. Callers hold the
     * adoption lock.
     */
    void open(Path stateDir, StateStoreProvider stores, String storeName) throws IOException {
        dirs = new SandboxDirs(stateDir);
        StateStore opened = stores.open(stateDir, NodeId.readOrCreate(stateDir), StateCollections.ALL, new StoreEvents() {
            @Override
            public void committed(long waitNanos, long heldNanos) {
                observer().storeCommitted(storeName, waitNanos, heldNanos);
            }

            @Override
            public void health(boolean up) {
                storeHealth = Map.entry(storeName, up);
                observer().storeHealth(storeName, up);
            }
        });
        for (Stored<SandboxRecord> s : opened.all(StateCollections.SANDBOXES)) {
            if (s.node().equals(opened.node())) {
                byId.put(s.key(), new Sandbox(s.body(), s.revision()));
            } else {
                LOG.log(Level.INFO, "sandbox " + s.key() + " lives on node " + s.node() + ", not on this one; leaving it alone");
            }
        }
        for (String id : dirs.without(StateCollections.RECORD)) {
            if (opened.get(StateCollections.SANDBOXES, id).isEmpty()) {
                opened.deleteIfPresent(StateCollections.DRY_RUNS, id);
                try {
                    dirs.remove(id);
                } catch (IOException e) {
                    // a create that never finished, whose directory something still holds (a mount of a
                    // process that outlived the daemon): it names no sandbox, so it keeps no start from going on
                    LOG.log(Level.WARNING, "cannot remove the directory of sandbox " + id + ", which has no record (a create "
                            + "the daemon did not see finish): " + e.getMessage() + "; tried again at the next start");
                }
            }
        }
        state = opened;
    }

    void close() {
        byId.clear();
        StateStore s = state;
        state = null;
        if (s != null) {
            s.close();
        }
    }

    boolean open() {
        return state != null;
    }

    StateStore state() {
        return state;
    }

    SandboxDirs dirs() {
        return dirs;
    }

    RuntimeObserver observer() {
        return observer.get();
    }

    /** Tells {@code o}, which just arrived, what the store said of its health before it did. */
    void tellStoreHealth(RuntimeObserver o) {
        Map.Entry<String, Boolean> last = storeHealth;
        if (last != null) {
            o.storeHealth(last.getKey(), last.getValue());
        }
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

    /** The sandbox {@code id} names, whoever's it is, if it is not deleted. */
    java.util.Optional<Sandbox> any(String id) {
        Sandbox sb = byId.get(id);
        return sb == null || sb.deleted() ? java.util.Optional.empty() : java.util.Optional.of(sb);
    }

    /** Whether {@code id} names a sandbox that is not deleted. */
    boolean exists(String id) {
        Sandbox sb = byId.get(id);
        return sb != null && !sb.deleted();
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

    /** Stores {@code r} over the revision {@code sb} holds, then holds it; callers hold its lifecycle lock. */
    void persist(Sandbox sb, SandboxRecord r) throws IOException {
        write(sb, r, true);
    }

    /**
     * {@link #persist} of a create's first record, which only tells a later start what to clean up
     * if the create does not finish: it does not wait for the disk. A daemon killed mid-create
     * leaves it all the same; a crash of the host ends the processes it would name, and a start
     * removes a sandbox directory that has no record. The record of the made sandbox, which the
     * caller is answered with, is durable ({@link #persist}).
     */
    void persistCreating(Sandbox sb, SandboxRecord r) throws IOException {
        write(sb, r, false);
    }

    private void write(Sandbox sb, SandboxRecord r, boolean durable) throws IOException {
        Transaction tx = new Transaction().put(StateCollections.SANDBOXES, r.id(), r, sb.revision());
        if (!durable) {
            tx.withoutAwaitingDurability();
        }
        removeUndoneCreates();
        long start = System.nanoTime();
        state.commit(tx);
        sb.record(r, sb.revision() + 1);
        observer().stateWritten(System.nanoTime() - start);
    }

    private void removeUndoneCreates() {
        for (String id : undoneCreates) {
            try {
                state.deleteIfPresent(StateCollections.SANDBOXES, id);
                undoneCreates.remove(id);
            } catch (IOException | StaleRevisionException | ApiException stillAway) {
                return; // tried again at the next write
            }
        }
    }

    /** Marks the sandbox failed, in memory and on disk; callers hold its lifecycle lock. */
    void fail(Sandbox sb, String why) {
        SandboxRecord failed = sb.record().failed(why);
        sb.record(failed, sb.revision());
        sb.attach(null, -1);
        try {
            persist(sb, failed);
        } catch (IOException | StaleRevisionException | ApiException e) {
            // the store away (a 503) or failing: the sandbox is failed in memory; a restart finds its instance gone again
            LOG.log(Level.ERROR, "cannot persist failure of sandbox " + failed.id(), e);
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
                persist(sb, r);
            } catch (IOException io) {
                throw ApiException.internal("cannot persist the new state of sandbox " + r.id()
                        + "; a daemon restart may not find it again", io);
            }
            sb.replace(before, after);
        } finally {
            sb.lifecycle.unlock(observer());
        }
    }

    /**
     * Removes its records (with a dry-run's in progress, in one transaction), then its directory.
     * A store that cannot be reached (a 503) leaves the sandbox known, so that a retry of the delete
     * finishes it, unless {@code evenIfStoreAway} (a create undone: its caller never learnt the id);
     * any other failure to write is logged and the sandbox forgotten all the same.
     */
    void forget(Sandbox sb, boolean evenIfStoreAway) {
        String id = sb.record().id();
        try {
            Transaction tx = new Transaction().delete(StateCollections.SANDBOXES, id, sb.revision());
            state.get(StateCollections.DRY_RUNS, id).ifPresent(d -> tx.delete(StateCollections.DRY_RUNS, id, d.revision()));
            state.commit(tx);
        } catch (IOException | StaleRevisionException e) {
            LOG.log(Level.ERROR, "cannot remove the records of sandbox " + id, e);
        } catch (ApiException storeAway) {
            if (!evenIfStoreAway) {
                throw storeAway;
            }
            undoneCreates.add(id);
            LOG.log(Level.WARNING, "cannot remove the record of sandbox " + id + ", whose create was undone, yet: "
                    + storeAway.getMessage() + "; the next write that gets through (or the next start) removes it");
        }
        sb.markDeleted();
        byId.remove(id);
        onForget.accept(sb.record());
        try {
            dirs.remove(id);
        } catch (IOException e) {
            LOG.log(Level.ERROR, "cannot remove the files of sandbox " + id, e);
        }
    }
}
