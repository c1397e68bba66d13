package io.vivarium.backend.procbox.internal;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The executor a pool launches ahead with: one daemon thread at most, none while idle, made by the
 * JDK's own thread factory. A worker thread can outlive its pool: Felix 7.0.5's class loaders keep
 * the thread that lost a race to define a class in their lock table, dead or alive (measured: a pool
 * worker of procbox's first revision kept in jackson-core's loader after 20 updates). What such a
 * thread reaches is its executor, so the executor holds no object of this bundle once its tasks are
 * done (no factory of ours), and the revision can still be collected.
 */
final class PoolFiller {

    private PoolFiller() {
    }

    static ThreadPoolExecutor named(String threadName) {
        return new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                Thread.ofPlatform().name(threadName).daemon().factory());
    }
}
