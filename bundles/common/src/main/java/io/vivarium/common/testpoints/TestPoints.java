package io.vivarium.common.testpoints;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named points between the steps of multi-step writes (core: a create, a fork's children, a
 * snapshot build, branch or compaction; backends: a QMP job QEMU has accepted, a gVisor container
 * paused for its checkpoint), where the crash tests stop the daemon. Off unless one of three JVM
 * system properties is set at start, which only tests do (docs/snapshots.md). {@code POINT#N} means
 * the N-th time any thread reaches POINT, POINT alone every time:
 * <ul>
 * <li>{@value #HALT}{@code =POINT[#N]}: the JVM halts ({@link Runtime#halt}, no shutdown hook runs:
 * for what is on disk as abrupt as {@code kill -9});</li>
 * <li>{@value #STALL}{@code =POINT[#N]:MILLIS}: the thread waits MILLIS there (a capture made slow,
 * to reach a deadline);</li>
 * <li>{@value #HOLD}{@code =POINT[#N]:FILE}: the thread waits there until FILE exists, so that a
 * test does something at exactly that moment (deletes what the step needs, say) and then lets it
 * go on by creating FILE. It says so on stderr ({@value #HOLDING} ...) as it starts waiting.</li>
 * </ul>
 * A bundle that reaches points embeds its own copy of this class (common is never shared), so the
 * counts behind {@code #N} are per bundle; each point is reached by one bundle only.
 */
public final class TestPoints {
    static final String HALT = "vivarium.test.halt.at";
    static final String STALL = "vivarium.test.stall.at";
    static final String HOLD = "vivarium.test.hold.at";
    /** How a held thread's line on stderr starts; the point and its count follow. */
    public static final String HOLDING = "vivarium: holding at test point ";
    /** A hold whose file never comes lets the thread go on after this, so a failed test cannot wedge the daemon. */
    private static final Duration HOLD_LIMIT = Duration.ofMinutes(10);
    private static final System.Logger LOG = System.getLogger(TestPoints.class.getName());
    private static final TestPoints PROPERTIES = new TestPoints(System.getProperty(HALT), System.getProperty(STALL),
            System.getProperty(HOLD), () -> Runtime.getRuntime().halt(137));

    private final String haltAt;
    private final String stallAt;
    private final String holdAt;
    private final Runnable halt;
    private final Map<String, AtomicInteger> reached = new ConcurrentHashMap<>();
    private volatile boolean halting;

    TestPoints(String haltAt, String stallAt, String holdAt, Runnable halt) {
        this.haltAt = haltAt;
        this.stallAt = stallAt;
        this.holdAt = holdAt;
        this.halt = halt;
    }

    /** Reached {@code point}: does what the JVM's properties ask there, if anything. */
    public static void reach(String point) {
        PROPERTIES.reached(point);
    }

    void reached(String point) {
        if (haltAt == null && stallAt == null && holdAt == null) {
            return;
        }
        int n = reached.computeIfAbsent(point, p -> new AtomicInteger()).incrementAndGet();
        if (haltAt != null && (halting || beyond(haltAt, point, n))) {
            // the JVM is halting: a thread that got here after the halting one does no more, as after kill -9
            awaitTheHalt();
        }
        if (haltAt != null && matches(haltAt, point, n)) {
            halting = true;
            System.err.println("vivarium: halting at test point " + point + "#" + n + " (" + HALT + ")");
            System.err.flush();
            halt.run();
        }
        if (stallAt != null && matches(before(stallAt), point, n)) {
            long millis = Long.parseLong(after(stallAt));
            LOG.log(System.Logger.Level.WARNING, "stalling " + millis + " ms at test point " + point + " (" + STALL + ")");
            pause(millis);
        }
        if (holdAt != null && matches(before(holdAt), point, n)) {
            hold(point + "#" + n, Path.of(after(holdAt)));
        }
    }

    private static boolean matches(String spec, String point, int n) {
        return spec.equals(point) || spec.equals(point + "#" + n);
    }

    /** Whether this is a reach of the halting point after the one that halts ({@code POINT#N}, a reach past N). */
    private static boolean beyond(String spec, String point, int n) {
        int hash = spec.lastIndexOf('#');
        return hash > 0 && spec.substring(0, hash).equals(point) && n > Integer.parseInt(spec.substring(hash + 1));
    }

    /** Until the process is gone (or the thread is interrupted, which only a test of this class does). */
    private static void awaitTheHalt() {
        while (!Thread.currentThread().isInterrupted()) {
            pause(1000);
        }
    }

    private static String before(String spec) {
        int colon = spec.indexOf(':');
        return colon < 0 ? spec : spec.substring(0, colon);
    }

    private static String after(String spec) {
        int colon = spec.indexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("a test point's stall or hold needs POINT[#N]:VALUE, got " + spec);
        }
        return spec.substring(colon + 1);
    }

    private static void hold(String point, Path file) {
        System.err.println(HOLDING + point + " until " + file + " exists (" + HOLD + ")");
        System.err.flush();
        long deadline = System.nanoTime() + HOLD_LIMIT.toNanos();
        while (!Files.exists(file) && System.nanoTime() < deadline && !Thread.currentThread().isInterrupted()) {
            pause(10);
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
