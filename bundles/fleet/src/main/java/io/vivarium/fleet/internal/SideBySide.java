package io.vivarium.fleet.internal;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

/**
 * The master's work for several nodes at once, each node's on a virtual thread of its own, so that
 * it takes as long as the slowest node's, not the sum of them.
 */
final class SideBySide {
    private SideBySide() {
    }

    /** What one node's work ended with: its value, or the exception that ended it. */
    record Outcome<V>(V value, RuntimeException failure) {
    }

    /** Runs {@code work} for each of {@code nodes} at once and waits for all; the outcomes are in the order of {@code nodes}. */
    static <V> Map<String, Outcome<V>> run(Collection<String> nodes, Function<String, V> work) {
        Map<String, Future<V>> started = new LinkedHashMap<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (String node : nodes) {
                started.put(node, threads.submit(() -> work.apply(node)));
            }
        }
        Map<String, Outcome<V>> outcomes = new LinkedHashMap<>();
        started.forEach((node, f) -> outcomes.put(node, f.state() == Future.State.SUCCESS ? new Outcome<>(f.resultNow(), null)
                : new Outcome<>(null, f.exceptionNow() instanceof RuntimeException e ? e
                        : new IllegalStateException("the work for node " + node + " failed: " + f.exceptionNow(), f.exceptionNow()))));
        return outcomes;
    }
}
