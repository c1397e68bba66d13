package io.vivarium.common.state;

import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Transaction;

/**
 * The locks a store's commit holds, so that its cache follows the order its writes took: a commit
 * of one write holds the store shared and its key's lock (writes of different records overlap), a
 * transaction of several, or a commit that must first repair the store, holds it exclusively.
 * Tells {@link StoreEvents} how long each commit waited and held.
 */
public final class CommitLocks {
    private final ReentrantReadWriteLock store = new ReentrantReadWriteLock();
    private final Lock[] keys = new Lock[64];
    private final StoreEvents events;

    public CommitLocks(StoreEvents events) {
        this.events = events;
        for (int i = 0; i < keys.length; i++) {
            keys[i] = new ReentrantLock();
        }
    }

    /** Held locks: released by {@link #close}, which reports the times. */
    public final class Held implements AutoCloseable {
        private final Lock outer;
        private final Lock key;
        private final long start;
        private final long acquired;

        private Held(Lock outer, Lock key, long start) {
            this.outer = outer;
            this.key = key;
            this.start = start;
            this.acquired = System.nanoTime();
        }

        /** Whether this commit holds the store exclusively. */
        public boolean exclusive() {
            return outer == store.writeLock();
        }

        @Override
        public void close() {
            if (key != null) {
                key.unlock();
            }
            outer.unlock();
            events.committed(acquired - start, System.nanoTime() - acquired);
        }
    }

    /**
     * Takes what a commit of {@code ops} needs.
     *
     * @param repair whether the store must repair itself first (it then holds the store exclusively);
     *        asked again once the shared lock is held, as a repair may have become due meanwhile
     */
    public Held lock(List<Transaction.Op> ops, java.util.function.BooleanSupplier repair) {
        long start = System.nanoTime();
        Lock outer = ops.size() > 1 || repair.getAsBoolean() ? store.writeLock() : store.readLock();
        outer.lock();
        if (outer == store.readLock() && repair.getAsBoolean()) {
            outer.unlock();
            outer = store.writeLock();
            outer.lock();
        }
        Lock key = null;
        if (ops.size() == 1 && outer == store.readLock()) {
            Transaction.Op op = ops.get(0);
            key = keys[Math.floorMod((op.collection().name() + "/" + op.key()).hashCode(), keys.length)];
            key.lock();
        }
        return new Held(outer, key, start);
    }
}
