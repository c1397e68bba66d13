package io.vivarium.launcher;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleEvent;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.SynchronousBundleListener;

/**
 * Where a start's time goes, printed on stderr when the daemon is started with
 * {@code -Dvivarium.startup.trace=true}: one {@code startup: PHASE EPOCH_MILLIS} line per phase,
 * the first ({@code jvm}) when the JVM was created, then the slowest bundle activations. The
 * cold-start benchmark reads these lines against the time it started the script. Absolute times,
 * as the process start time Linux reports is only as precise as the boot time it is counted from.
 */
final class StartupTrace implements SynchronousBundleListener {

    static final String PROPERTY = "vivarium.startup.trace";
    private static final int SLOWEST = 6;

    private final Map<Long, Long> starting = new ConcurrentHashMap<>();
    private final List<Activation> activations = new CopyOnWriteArrayList<>();

    private record Activation(String bundle, long micros) {
    }

    private StartupTrace() {
    }

    /** A trace if the property asks for one, else null. */
    static StartupTrace fromSystemProperty() {
        if (!Boolean.getBoolean(PROPERTY)) {
            return null;
        }
        StartupTrace trace = new StartupTrace();
        trace.print("jvm", ManagementFactory.getRuntimeMXBean().getStartTime());
        return trace;
    }

    void mark(String phase) {
        print(phase, System.currentTimeMillis());
    }

    private static void print(String phase, long epochMillis) {
        synchronized (System.err) {
            System.err.println("startup: " + phase + " " + epochMillis);
            System.err.flush();
        }
    }

    void watch(BundleContext ctx) {
        ctx.addBundleListener(this);
        ctx.addFrameworkListener(event -> {
            if (event.getType() == FrameworkEvent.STARTED) {
                mark("start-levels-reached");
            }
        });
    }

    @Override
    public void bundleChanged(BundleEvent event) {
        Bundle b = event.getBundle();
        switch (event.getType()) {
            case BundleEvent.STARTING -> starting.put(b.getBundleId(), System.nanoTime());
            case BundleEvent.STARTED -> {
                Long t0 = starting.remove(b.getBundleId());
                if (t0 != null) {
                    activations.add(new Activation(b.getSymbolicName(), (System.nanoTime() - t0) / 1000));
                }
            }
            default -> {
                // not a start
            }
        }
    }

    /** The slowest bundle activations (the activator and what Declarative Services does meanwhile) and their sum. */
    void reportActivations() {
        List<Activation> sorted = new ArrayList<>(activations);
        long total = sorted.stream().mapToLong(Activation::micros).sum();
        sorted.sort(Comparator.comparingLong(Activation::micros).reversed());
        StringBuilder sb = new StringBuilder("startup: activations " + total / 1000 + " ms in " + sorted.size()
                + " bundles, slowest (ms):");
        for (Activation a : sorted.subList(0, Math.min(SLOWEST, sorted.size()))) {
            sb.append(' ').append(a.bundle()).append('=').append(a.micros() / 1000);
        }
        synchronized (System.err) {
            System.err.println(sb);
            System.err.flush();
        }
    }
}
