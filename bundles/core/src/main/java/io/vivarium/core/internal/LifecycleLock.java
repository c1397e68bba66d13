package io.vivarium.core.internal;

import java.util.concurrent.locks.ReentrantLock;

import io.vivarium.api.spi.RuntimeObserver;

/**
 * A sandbox's lifecycle lock that measures how long its takers wait for it and hold it. Reentrant;
 * only the outermost hold is measured.
 */
final class LifecycleLock {
    private final ReentrantLock lock = new ReentrantLock();
    /** Guarded by {@link #lock}: of the outermost hold. */
    private long waitedNanos;
    private long acquiredAt;

    void lock() {
        long asked = System.nanoTime();
        lock.lock();
        if (lock.getHoldCount() == 1) {
            acquiredAt = System.nanoTime();
            waitedNanos = acquiredAt - asked;
        }
    }

    /** Releases the lock, telling {@code observer} about the hold when it was the outermost one. */
    void unlock(RuntimeObserver observer) {
        boolean outermost = lock.getHoldCount() == 1;
        long waited = waitedNanos;
        long held = System.nanoTime() - acquiredAt;
        lock.unlock();
        if (outermost) {
            observer.lifecycleLockReleased(waited, held);
        }
    }
}
