package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pool's bookkeeping, with a factory whose sandboxes are marker files. */
class SandboxPoolTest {

    @TempDir
    Path tmp;

    /** A sandbox is the name it was launched as; what happened to each is recorded. */
    static final class FakeFactory implements SandboxPool.Factory<String> {
        final List<String> launched = new CopyOnWriteArrayList<>();
        final List<String> discarded = new CopyOnWriteArrayList<>();
        final Map<String, String> assigned = new ConcurrentHashMap<>();
        final Map<String, Boolean> dead = new ConcurrentHashMap<>();
        volatile CountDownLatch gate = new CountDownLatch(0);
        volatile String assignFails;
        /** Launches begun, the gate's wait included. */
        final AtomicInteger begun = new AtomicInteger();

        @Override
        public String launch(String name, Path dir) {
            begun.incrementAndGet();
            try {
                if (!gate.await(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the test never opened the gate");
                }
                Files.writeString(dir.resolve("sandbox"), name);
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
            launched.add(name);
            return name;
        }

        @Override
        public boolean alive(String sandbox) {
            return !dead.containsKey(sandbox);
        }

        @Override
        public void assign(String sandbox, String id) throws IOException {
            if (assignFails != null) {
                throw new IOException(assignFails);
            }
            assigned.put(sandbox, id);
        }

        @Override
        public void discard(String name, Path dir, String sandbox) {
            discarded.add(name);
        }

        @Override
        public void delete(Path dir) throws IOException {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    private final FakeFactory factory = new FakeFactory();

    @Test
    void theFirstTakeStartsThePoolAndLaterTakesAreServedAndRefilled() throws IOException {
        try (SandboxPool<String> pool = new SandboxPool<>(2, factory, "pool-test")) {
            Path root = tmp.resolve("procbox-pool");
            assertEquals(Optional.empty(), take(pool, root, "sb-1"), "nothing is launched before the first create");
            await("the pool filled up", () -> pool.ready() == 2);
            assertEquals(2, factory.launched.size());

            Path target = tmp.resolve("sb-2");
            Optional<String> taken = pool.take(root, "sb-2", target);

            assertTrue(taken.isPresent(), "a ready sandbox was handed over");
            assertEquals("sb-2", factory.assigned.get(taken.get()), "it was given the caller's id");
            assertEquals(taken.get(), Files.readString(target.resolve("sandbox")), "its directory moved to the caller's");
            assertFalse(Files.exists(root.resolve("pool-test").resolve(taken.get())));
            await("a launch replaced the one taken", () -> pool.ready() == 2);
            assertEquals(3, factory.launched.size(), "no more than the bound is launched");
        }
    }

    @Test
    void anEmptyPoolServesNothingAndTheCallerLaunchesItself() throws IOException {
        try (SandboxPool<String> pool = new SandboxPool<>(1, factory, "pool-test")) {
            Path root = tmp.resolve("procbox-pool");
            take(pool, root, "sb-1");
            await("the pool filled up", () -> pool.ready() == 1);
            factory.gate = new CountDownLatch(1);

            assertTrue(take(pool, root, "sb-2").isPresent());
            assertEquals(Optional.empty(), take(pool, root, "sb-3"), "the replacement is still being launched");

            factory.gate.countDown();
            await("the replacement is ready", () -> pool.ready() == 1);
        }
    }

    @Test
    void aPooledSandboxThatDiedIsDiscardedNotHandedOver() throws IOException {
        try (SandboxPool<String> pool = new SandboxPool<>(1, factory, "pool-test")) {
            Path root = tmp.resolve("procbox-pool");
            take(pool, root, "sb-1");
            await("the pool filled up", () -> pool.ready() == 1);
            String pooled = factory.launched.get(0);
            factory.dead.put(pooled, true);

            assertEquals(Optional.empty(), take(pool, root, "sb-2"));
            assertEquals(List.of(pooled), factory.discarded);
            assertFalse(Files.exists(root.resolve("pool-test").resolve(pooled)), "its directory was deleted");
        }
    }

    @Test
    void aHandOverThatFailsTurnsThePoolOffRatherThanPayingTwiceForEveryCreate() throws IOException {
        try (SandboxPool<String> pool = new SandboxPool<>(2, factory, "pool-test")) {
            Path root = tmp.resolve("procbox-pool");
            take(pool, root, "sb-1");
            await("the pool filled up", () -> pool.ready() == 2);
            factory.assignFails = "sethostname: Operation not permitted";

            assertEquals(Optional.empty(), take(pool, root, "sb-2"), "the caller launches its own");
            assertTrue(pool.offReason() != null && pool.offReason().contains("Operation not permitted"), pool.offReason());
            await("every pooled sandbox was discarded", () -> factory.discarded.size() == factory.launched.size());
            assertEquals(0, pool.ready());
            int launched = factory.launched.size();
            assertEquals(Optional.empty(), take(pool, root, "sb-3"));
            assertEquals(launched, factory.launched.size(), "an off pool launches nothing more");
        }
    }

    @Test
    void closeDiscardsThePooledSandboxesAndTheirDirectory() throws IOException {
        Path root = tmp.resolve("procbox-pool");
        SandboxPool<String> pool = new SandboxPool<>(2, factory, "pool-test");
        take(pool, root, "sb-1");
        await("the pool filled up", () -> pool.ready() == 2);

        pool.close();

        assertEquals(Set.copyOf(factory.launched), Set.copyOf(factory.discarded));
        assertEquals(2, factory.discarded.size());
        assertFalse(Files.exists(root.resolve("pool-test")));
        assertEquals(Optional.empty(), take(pool, root, "sb-2"), "a closed pool serves nothing");
    }

    @Test
    void closeDiscardsWhatALaunchUnderWayMakes() throws Exception {
        Path root = tmp.resolve("procbox-pool");
        SandboxPool<String> pool = new SandboxPool<>(1, factory, "pool-test");
        factory.gate = new CountDownLatch(1);
        take(pool, root, "sb-1");
        // a close before the launch began would find nothing under way (the launch then sees the pool closed)
        await("the launch is under way", () -> factory.begun.get() == 1);
        Thread closer = new Thread(pool::close);
        closer.start();
        await("close waits for the launch", () -> closer.getState() == Thread.State.TIMED_WAITING);

        factory.gate.countDown();
        closer.join(10_000);

        assertFalse(closer.isAlive());
        assertEquals(factory.launched, factory.discarded);
        assertEquals(1, factory.discarded.size());
    }

    @Test
    void startingDiscardsThePoolsOfDaemonsThatNoLongerRun() throws IOException {
        Path root = tmp.resolve("procbox-pool");
        // pid 999999999 is above any pid_max: no such process runs
        Path abandoned = Files.createDirectories(root.resolve("pool-999999999-1-old"));
        Files.createDirectories(abandoned.resolve("pooled-a"));
        Files.createDirectories(abandoned.resolve("pooled-b"));
        Path live = Files.createDirectories(root.resolve(DaemonOwnedDirs.newName()));
        Files.createDirectories(live.resolve("pooled-c"));

        try (SandboxPool<String> pool = new SandboxPool<>(1, factory, "pool-test")) {
            take(pool, root, "sb-1");
            await("the abandoned pool is gone", () -> !Files.exists(abandoned));
        }

        assertTrue(factory.discarded.containsAll(List.of("pooled-a", "pooled-b")));
        assertFalse(factory.discarded.contains("pooled-c"), "a running daemon's pool is left alone");
        assertTrue(Files.exists(live.resolve("pooled-c")));
    }

    @Test
    void aPoolOfSizeZeroLaunchesNothing() throws IOException {
        try (SandboxPool<String> pool = new SandboxPool<>(0, factory, "pool-test")) {
            assertEquals(Optional.empty(), take(pool, tmp.resolve("procbox-pool"), "sb-1"));
            assertEquals(0, pool.ready());
            assertEquals(null, pool.dir());
        }
        assertTrue(factory.launched.isEmpty());
    }

    private Optional<String> take(SandboxPool<String> pool, Path root, String id) {
        return pool.take(root, id, tmp.resolve(id));
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within 10 s: " + what);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted while waiting until " + what);
            }
        }
    }
}
