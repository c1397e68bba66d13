package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named points between the steps of core's multi-step writes (a create, a fork's children, a
 * snapshot build, branch or compaction), where the crash tests stop the daemon. Off unless one of
 * two JVM system properties is set at start, which only tests do (docs/snapshots.md):
 * <ul>
 * <li>{@value #HALT}{@code =POINT} or {@code POINT#N}: the JVM halts ({@link Runtime#halt}, no
 * shutdown hook runs: for what is on disk as abrupt as {@code kill -9}) the N-th time (default the
 * first) any thread reaches POINT;</li>
 * <li>{@value #STALL}{@code =POINT:MILLIS}: each thread reaching POINT waits MILLIS there (a capture
 * made slow, to reach a deadline).</li>
 * </ul>
 */
final class TestPoints {
    static final String HALT = "vivarium.test.halt.at";
    static final String STALL = "vivarium.test.stall.at";
    private static final System.Logger LOG = System.getLogger(TestPoints.class.getName());
    private static final String HALT_AT = System.getProperty(HALT);
    private static final String STALL_AT = System.getProperty(STALL);
    private static final Map<String, AtomicInteger> REACHED = new ConcurrentHashMap<>();

    private TestPoints() {
    }

    static void reach(String point) {
        if (HALT_AT == null && STALL_AT == null) {
            return;
        }
        int n = REACHED.computeIfAbsent(point, p -> new AtomicInteger()).incrementAndGet();
        if (HALT_AT != null && (HALT_AT.equals(point) || HALT_AT.equals(point + "#" + n))) {
            System.err.println("vivarium: halting at test point " + point + " (" + HALT + ")");
            System.err.flush();
            Runtime.getRuntime().halt(137);
        }
        if (STALL_AT != null && STALL_AT.startsWith(point + ":")) {
            long millis = Long.parseLong(STALL_AT.substring(point.length() + 1));
            LOG.log(Level.WARNING, "stalling " + millis + " ms at test point " + point + " (" + STALL + ")");
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
