package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.vivarium.api.Caller;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;

import org.junit.Assume;
import org.junit.FixMethodOrder;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.MethodSorters;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.Constants;
import org.osgi.framework.wiring.BundleRevisions;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * Upgrades leave nothing behind: after 20 update + refresh cycles of the procbox bundle, with a
 * sandbox (and a background process in it) running throughout, the bundle has one revision,
 * nothing is pending removal, the API bundle has as many wires as before, the heap does not grow
 * per cycle, and the class loader of the revision that ran before the first update is collected.
 * Each test reports its figures with these goals ({@link BenchReport}: {@code target/bench/LeakIT.md},
 * {@code LeakIT.heldOutput.md}).
 *
 * <p>A class loader that stays reachable is diagnosed here: threads running procbox code (an exec's
 * output pump, say), and core's references to backends and instances (read reflectively).
 */
@RunWith(PaxExam.class)
@FixMethodOrder(MethodSorters.NAME_ASCENDING)
public class LeakIT extends VivariumOsgiTestSupport {

    private static final Caller ADMIN = new Caller("default", Role.ADMIN);
    private static final int CYCLES = 20;
    private static final int HEAP_BASELINE_CYCLE = 5;
    private static final long MAX_GROWTH_PER_CYCLE = 1L << 20;
    private static final Duration COLLECT_TIMEOUT = Duration.ofSeconds(10);

    /**
     * Each test's report ({@link BenchReport}), made only once the test has measured (or has ended
     * otherwise), as are its goals: the tests run exactly the code they ran before they had one
     * until their class loaders are checked.
     */
    private BenchReport report;

    @Test
    public void a_twentyUpdateCyclesLeakNoRevisionWireHeapOrClassLoader() throws Exception {
        long started = System.currentTimeMillis();
        try {
            assumeSandboxes();
            SandboxService sandboxes = awaitService(SandboxService.class, null);
            Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
            Bundle api = bundle("io.vivarium.api");
            await("core lists procbox", () -> procboxVersion(sandboxes) != null, sandboxes::backends);

            SandboxInfo sandbox = sandboxes.create(ADMIN, null);
            String id = sandbox.id();
            try {
                // a background process that does not hold the exec's stdout or stderr: nothing of it may pin a revision
                ok(sandboxes, id, "sh", "-c", "sleep 600 > /dev/null 2>&1 & echo $! > /work/bg.pid");
                ok(sandboxes, id, "true");
                int apiWiresBefore = api.adapt(BundleWiring.class).getProvidedWires(null).size();
                WeakReference<ClassLoader> firstLoader = currentClassLoader(procbox);
                byte[] shipped = ProcboxBuilds.shippedJar(procbox);

                long heapAtBaseline = -1;
                List<Double> cycleMillis = new ArrayList<>();
                for (int c = 1; c <= CYCLES; c++) {
                    String version = "0.1.0.upgrade" + c;
                    ProcboxBuilds.Upgrade u = ProcboxBuilds.updateAndRefresh(context(), procbox,
                            ProcboxBuilds.withVersion(shipped, version), TIMEOUT);
                    await("core lists procbox " + version, () -> version.equals(procboxVersion(sandboxes)),
                            sandboxes::backends);
                    cycleMillis.add((System.nanoTime() - u.started()) / 1e6);
                    ok(sandboxes, id, "true"); // every revision runs an exec, loading its exec classes
                    if (c == HEAP_BASELINE_CYCLE) {
                        heapAtBaseline = usedHeapAfterGc();
                    }
                }
                long heapAtEnd = usedHeapAfterGc();
                double growthPerCycle = (heapAtEnd - heapAtBaseline) / (double) (CYCLES - HEAP_BASELINE_CYCLE);

                int revisions = procbox.adapt(BundleRevisions.class).getRevisions().size();
                Collection<Bundle> pending = frameworkWiring().getRemovalPendingBundles();
                int apiWiresAfter = api.adapt(BundleWiring.class).getProvidedWires(null).size();
                long collectedAfter = awaitCollected(firstLoader, COLLECT_TIMEOUT);
                String holders = collectedAfter < 0 ? whoHolds(firstLoader, sandboxes) : "";

                SandboxInfo after = sandboxes.get(ADMIN, id);
                ExecResult bgAlive = exec(sandboxes, id, "sh", "-c", "kill -0 \"$(cat /work/bg.pid)\"");

                String text = String.format(Locale.ROOT, "%d update + refresh cycles of procbox:%n%n"
                        + "| measurement | value |%n|---|---|%n"
                        + "| cycle time (update() → new version listed), p50 / max | %.1f / %.1f ms |%n"
                        + "| revisions of the procbox bundle | %d |%n"
                        + "| bundles pending removal | %s |%n"
                        + "| provided wires of io.vivarium.api before / after | %d / %d |%n"
                        + "| used heap after GC, after cycle %d / after cycle %d | %.2f / %.2f MiB |%n"
                        + "| heap growth per cycle (cycles %d→%d) | %.1f KiB |%n"
                        + "| class loader of the first revision collected | %s |%n"
                        + "| sandbox %s: status, init pid before / after, background process alive | %s, %d / %d, %s |%n%s",
                        CYCLES, Stats.p50(cycleMillis), Stats.max(cycleMillis), revisions, pending.isEmpty() ? "none" : pending,
                        apiWiresBefore, apiWiresAfter, HEAP_BASELINE_CYCLE, CYCLES, heapAtBaseline / 1048576.0,
                        heapAtEnd / 1048576.0, HEAP_BASELINE_CYCLE, CYCLES, growthPerCycle / 1024,
                        collectedAfter < 0 ? "**no**" : "yes (" + collectedAfter + " ms after the last cycle)",
                        id, after.status(), sandbox.pid(), after.pid(), bgAlive.exitCode() == 0 ? "yes" : "no (" + bgAlive + ")",
                        holders.isEmpty() ? "" : "\nStill reachable; what holds it:\n" + holders + "\n");
                BenchReport bench = reported("", started);
                bench.add(text);
                bench.check(Goals.REVISIONS, revisions);
                bench.check(Goals.PENDING, pending.size());
                bench.check(Goals.WIRES, apiWiresAfter - apiWiresBefore);
                bench.check(Goals.HEAP, growthPerCycle / 1024);
                bench.check(Goals.COLLECTED, collectedAfter >= 0, collectedAfter >= 0 ? "yes" : "no");
                bench.write();

                assertEquals("revisions of the procbox bundle after " + CYCLES + " cycles", 1, revisions);
                assertTrue("bundles pending removal: " + pending, pending.isEmpty());
                assertEquals("provided wires of io.vivarium.api (a dropped revision still wired to it?)", apiWiresBefore,
                        apiWiresAfter);
                assertTrue(String.format(Locale.ROOT, "heap grew %.1f KiB per cycle between cycles %d and %d (limit %d KiB)",
                        growthPerCycle / 1024, HEAP_BASELINE_CYCLE, CYCLES, MAX_GROWTH_PER_CYCLE / 1024),
                        growthPerCycle < MAX_GROWTH_PER_CYCLE);
                assertTrue("the class loader of procbox's first revision is still reachable " + COLLECT_TIMEOUT.toSeconds()
                        + " s after " + CYCLES + " cycles; what holds it:\n" + holders, collectedAfter >= 0);
                assertEquals("status of the sandbox that ran through the cycles", "running", after.status());
                assertEquals("its init pid", sandbox.pid(), after.pid());
                assertEquals("its background process is gone: " + bgAlive, 0, bgAlive.exitCode());
            } finally {
                sandboxes.delete(ADMIN, id);
            }
        } catch (Exception | Error e) {
            reported("", started).endedBy(e);
            throw e;
        }
    }

    /**
     * An exec whose command leaves a background process holding its stdout (the shell idiom
     * {@code cmd &}) must not pin the procbox revision that ran it once that revision is updated
     * away. The exec's output pump threads read until the pipe closes; if they run code of the old
     * revision, its class loader (and every class it loaded) stays until the background process
     * exits.
     */
    @Test
    public void b_aBackgroundProcessHoldingExecOutputDoesNotPinTheOldRevision() throws Exception {
        long started = System.currentTimeMillis();
        try {
            heldOutput(started);
        } catch (Exception | Error e) {
            reported(".heldOutput", started).endedBy(e);
            throw e;
        }
    }

    private void heldOutput(long started) throws Exception {
        assumeSandboxes();
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
        await("core lists procbox", () -> procboxVersion(sandboxes) != null, sandboxes::backends);
        String id = sandboxes.create(ADMIN, null).id();
        try {
            ok(sandboxes, id, "sh", "-c", "sleep 600 & echo $! > /work/held.pid");
            WeakReference<ClassLoader> loader = currentClassLoader(procbox);
            String version = "0.1.0.held" + System.nanoTime();
            ProcboxBuilds.updateAndRefresh(context(), procbox,
                    ProcboxBuilds.withVersion(ProcboxBuilds.shippedJar(procbox), version), TIMEOUT);
            await("core lists procbox " + version, () -> version.equals(procboxVersion(sandboxes)), sandboxes::backends);

            long collected = awaitCollected(loader, Duration.ofSeconds(5));
            String holders = collected < 0 ? whoHolds(loader, sandboxes) : "";
            long afterKill = -1;
            if (collected < 0) {
                // confirm the diagnosis: once the background process exits, the pipe closes and the pump ends
                ok(sandboxes, id, "sh", "-c", "kill \"$(cat /work/held.pid)\"");
                afterKill = awaitCollected(loader, COLLECT_TIMEOUT);
            }
            String text = collected >= 0 ? "collected " + collected + " ms after the refresh"
                    : "NOT collected within 5 s while the background process ran; "
                            + (afterKill >= 0 ? "collected " + afterKill + " ms after killing that process"
                                    : "still not collected after killing it")
                            + "\nWhat held it:\n" + holders;
            BenchReport bench = reported(".heldOutput", started);
            bench.add("The revision that ran `sleep 600 &` (its stdout and stderr inherited), after an update: " + text);
            bench.check(Goals.HELD_COLLECTED, collected >= 0, collected >= 0 ? "yes (" + collected + " ms after the refresh)"
                    : "no");
            bench.write();
            assertTrue("the old procbox revision is pinned by an exec whose background process holds its output: "
                    + text, collected >= 0);
        } finally {
            sandboxes.delete(ADMIN, id);
        }
    }

    // ------------------------------------------------------------------ helpers

    /** This test's report (LeakIT for a_, LeakIT.heldOutput for b_), made the first time it is asked for. */
    private BenchReport reported(String suffix, long started) {
        if (report == null) {
            List<Goal> goals = suffix.isEmpty() ? Goals.OF_CYCLES : Goals.OF_HELD_OUTPUT;
            report = new BenchReport(getClass().getSimpleName() + suffix, goals, Instant.ofEpochMilli(started), null);
        }
        return report;
    }

    /** The goals, apart so that they are made with the report. */
    private static final class Goals {
        static final Goal REVISIONS = Goal.exactly("revisions of the procbox bundle after 20 update + refresh cycles", 1, "", 4);
        static final Goal PENDING = Goal.exactly("bundles pending removal", 0, "", 4);
        static final Goal WIRES = Goal.exactly("provided wires of io.vivarium.api, after − before", 0, "", 4);
        static final Goal HEAP = Goal.below("used heap after GC, growth per cycle (cycles 5→20)", MAX_GROWTH_PER_CYCLE >> 10,
                "KiB", 4);
        static final Goal COLLECTED = Goal.holds("class loader of the first revision collected", 4);
        static final List<Goal> OF_CYCLES = List.of(REVISIONS, PENDING, WIRES, HEAP, COLLECTED);
        static final Goal HELD_COLLECTED = Goal.holds("class loader of a revision whose exec left `sleep 600 &` holding its "
                + "output, collected while that process runs", 7);
        static final List<Goal> OF_HELD_OUTPUT = List.of(HELD_COLLECTED);
    }

    private static void assumeSandboxes() {
        Assume.assumeTrue("needs bubblewrap (/usr/bin/bwrap) and root to run procbox sandboxes",
                Files.isExecutable(Path.of("/usr/bin/bwrap")) && "root".equals(System.getProperty("user.name")));
    }

    /** Only a weak reference escapes: the revision must be collectable once it is refreshed away. */
    private static WeakReference<ClassLoader> currentClassLoader(Bundle bundle) {
        ClassLoader loader = bundle.adapt(BundleWiring.class).getClassLoader();
        assertTrue("no class loader for " + bundle.getSymbolicName(), loader != null);
        return new WeakReference<>(loader);
    }

    /** Milliseconds until {@code ref} was cleared (forcing GCs meanwhile), or -1 if it was not within {@code timeout}. */
    private static long awaitCollected(WeakReference<?> ref, Duration timeout) {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        while (true) {
            System.gc();
            if (ref.get() == null) {
                return (System.nanoTime() - start) / 1_000_000;
            }
            if (System.nanoTime() - deadline > 0) {
                return -1;
            }
            pause(50);
        }
    }

    /** Used heap after full GCs, once two readings in a row agree within 64 KiB (at most 5 s). */
    private static long usedHeapAfterGc() {
        var memory = ManagementFactory.getMemoryMXBean();
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        long last = Long.MAX_VALUE;
        while (true) {
            System.gc();
            pause(50); // lets reference processing and cleaners run before reading
            long used = memory.getHeapMemoryUsage().getUsed();
            if (Math.abs(used - last) < 64 * 1024 || System.nanoTime() - deadline > 0) {
                return used;
            }
            last = used;
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * What keeps {@code ref}'s class loader reachable, as far as can be seen without a heap dump:
     * live threads running procbox code or having it as context class loader, and core's registry
     * and sandbox instances whose classes it defined (read reflectively from the SandboxManager).
     */
    private String whoHolds(WeakReference<ClassLoader> ref, SandboxService core) {
        ClassLoader loader = ref.get();
        if (loader == null) {
            return "nothing (it was collected meanwhile)";
        }
        StringBuilder s = new StringBuilder();
        for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
            Thread thread = t.getKey();
            boolean runsProcbox = Arrays.stream(t.getValue())
                    .anyMatch(f -> f.getClassName().startsWith("io.vivarium.backend.procbox."));
            boolean ccl = thread.getContextClassLoader() == loader;
            if (runsProcbox || ccl || thread.getName().startsWith("procbox-")) {
                s.append("- thread \"").append(thread.getName()).append("\" (").append(thread.getState()).append(")")
                        .append(ccl ? ", context class loader = the old revision's" : "").append(runsProcbox ? ", running:" : "");
                Arrays.stream(t.getValue()).limit(8).forEach(f -> s.append("\n    at ").append(f));
                s.append('\n');
            }
        }
        try {
            Object manager = core;
            Object registry = field(manager, "registry");
            Map<?, ?> byName = (Map<?, ?>) field(registry, "byName");
            for (Object entry : byName.values()) {
                Object backend = field(entry, "backend");
                if (backend.getClass().getClassLoader() == loader) {
                    s.append("- core's BackendRegistry entry ").append(entry).append('\n');
                }
            }
            Map<?, ?> sandboxes = (Map<?, ?>) field(field(manager, "sandboxes"), "byId");
            for (Map.Entry<?, ?> sb : sandboxes.entrySet()) {
                Object instance = field(sb.getValue(), "instance");
                if (instance != null && instance.getClass().getClassLoader() == loader) {
                    s.append("- core's Sandbox ").append(sb.getKey()).append(" holds instance ").append(instance).append('\n');
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            s.append("- (cannot inspect core reflectively: ").append(e).append(")\n");
        }
        Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
        s.append("- procbox revisions now: ").append(procbox.adapt(BundleRevisions.class).getRevisions().size())
                .append(", pending removal: ").append(frameworkWiring().getRemovalPendingBundles()).append('\n');
        if (s.indexOf("- thread") < 0 && s.indexOf("- core's") < 0) {
            s.append("- no thread or core reference found: ").append(heapDump())
                    .append("; look at the GC roots of the BundleClassLoader of the first revision\n");
        }
        return s.toString();
    }

    /** Dumps the heap beside the reports (only live objects), for a leak the reflective look above does not explain. */
    private static String heapDump() {
        Path file = Path.of(System.getProperty("vivarium.itests.target", "target"), "leak-" + System.currentTimeMillis()
                + ".hprof").toAbsolutePath();
        try {
            java.lang.management.ManagementFactory.getPlatformMBeanServer().invoke(
                    new javax.management.ObjectName("com.sun.management:type=HotSpotDiagnostic"), "dumpHeap",
                    new Object[] {file.toString(), true}, new String[] {"java.lang.String", "boolean"});
            return "the heap is dumped in " + file;
        } catch (Exception e) {
            return "the heap could not be dumped (" + e + ")";
        }
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(target.getClass().getName() + "." + name);
    }

    private FrameworkWiring frameworkWiring() {
        return context().getBundle(Constants.SYSTEM_BUNDLE_ID).adapt(FrameworkWiring.class);
    }

    private static String procboxVersion(SandboxService sandboxes) {
        return sandboxes.backends().stream().filter(b -> b.name().equals("procbox")).map(b -> b.version())
                .findFirst().orElse(null);
    }

    private static ExecResult exec(SandboxService sandboxes, String id, String... argv) {
        return sandboxes.exec(ADMIN, id, new ExecRequest(List.of(argv), 10, null, null, null, null));
    }

    private static ExecResult ok(SandboxService sandboxes, String id, String... argv) {
        ExecResult r = exec(sandboxes, id, argv);
        assertEquals("exit code of " + List.of(argv) + " in " + id + ": " + r, 0, r.exitCode());
        return r;
    }
}
