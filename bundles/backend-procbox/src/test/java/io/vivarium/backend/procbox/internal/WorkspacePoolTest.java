package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkspacePoolTest {

    @TempDir
    Path tmp;

    private Path templates;
    private Path template;
    private final AtomicInteger copies = new AtomicInteger();

    @BeforeEach
    void template() throws IOException {
        templates = Files.createDirectory(tmp.resolve("templates"));
        template = Files.writeString(templates.resolve("workspace-8m.ext4"), "pristine");
    }

    private void copy(Path from, Path to) throws IOException {
        copies.incrementAndGet();
        Files.copy(from, to);
    }

    @Test
    void aTakeOnAnEmptyPoolMissesThenTheNextOnesGetReadyCopies() throws Exception {
        try (WorkspacePool pool = WorkspacePool.open(templates, 2, this::copy)) {
            assertTrue(pool.take(template, tmp.resolve("a.ext4")).isEmpty(), "nothing is made before the first take");
            await(() -> pool.ready() == 2);

            Path b = tmp.resolve("b.ext4");
            assertEquals(b, pool.take(template, b).orElseThrow());
            assertEquals("pristine", Files.readString(b));
            await(() -> pool.ready() == 2);
            assertEquals(3, copies.get(), "one copy replaces the one taken");
            assertEquals(2, files(pool.dir()).size());
        }
    }

    @Test
    void neverHoldsOrMakesMoreThanItsSize() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger started = new AtomicInteger();
        try (WorkspacePool pool = WorkspacePool.open(templates, 3, (from, to) -> {
            started.incrementAndGet();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
            Files.copy(from, to);
        })) {
            for (int i = 0; i < 10; i++) {
                assertTrue(pool.take(template, tmp.resolve("t" + i)).isEmpty());
            }
            release.countDown();
            await(() -> pool.ready() == 3);
            assertEquals(3, started.get(), "ten misses while copies were being made asked for no more than the bound");
        }
    }

    @Test
    void anotherTemplateDiscardsTheCopiesOfTheOldOne() throws Exception {
        Path other = Files.writeString(templates.resolve("workspace-16m.ext4"), "other");
        try (WorkspacePool pool = WorkspacePool.open(templates, 1, this::copy)) {
            pool.take(template, tmp.resolve("a"));
            await(() -> pool.ready() == 1);

            assertTrue(pool.take(other, tmp.resolve("b")).isEmpty(), "a copy of the old template is not handed out");
            await(() -> pool.ready() == 1);
            Path c = tmp.resolve("c");
            pool.take(other, c).orElseThrow();
            assertEquals("other", Files.readString(c));
        }
    }

    @Test
    void closeDeletesTheCopiesAndTheDirectoryAndServesNoMore() throws Exception {
        WorkspacePool pool = WorkspacePool.open(templates, 2, this::copy);
        pool.take(template, tmp.resolve("a"));
        await(() -> pool.ready() == 2);

        pool.close();

        assertFalse(Files.exists(pool.dir()));
        assertTrue(pool.take(template, tmp.resolve("b")).isEmpty());
        assertFalse(Files.exists(tmp.resolve("b")));
    }

    @Test
    void aFailingCopyLeavesNothingBehindAndTheCallerCopiesItself() throws Exception {
        try (WorkspacePool pool = WorkspacePool.open(templates, 2, (from, to) -> {
            Files.writeString(to, "half");
            copies.incrementAndGet();
            throw new IOException("disk full");
        })) {
            assertTrue(pool.take(template, tmp.resolve("a")).isEmpty());
            await(() -> copies.get() == 2 && files(pool.dir()).isEmpty());
            assertTrue(pool.take(template, tmp.resolve("b")).isEmpty());
            assertEquals(0, pool.ready());
        }
    }

    @Test
    void opensAfterRemovingThePoolsOfProcessesThatAreGone() throws Exception {
        long self = ProcessHandle.current().pid();
        String started = ProcFs.liveStartTime(self).orElseThrow();
        Path killed = Files.createDirectory(templates.resolve("pool-" + self + "-1" + started + "-x"));
        Files.writeString(killed.resolve("image-1.ext4"), "left by a daemon killed with -9");
        Path gone = Files.createDirectory(templates.resolve("pool-999999999-5-y"));
        Path live = Files.createDirectory(templates.resolve("pool-" + self + "-" + started + "-z"));

        try (WorkspacePool pool = WorkspacePool.open(templates, 1, this::copy)) {
            assertFalse(Files.exists(killed), "same pid, another start time: a daemon killed since");
            assertFalse(Files.exists(gone));
            assertTrue(Files.exists(live), "the pool of a process that still runs is left alone");
            assertTrue(Files.exists(template), "templates are not pools");
            assertFalse(Files.exists(pool.dir()), "made only with its first copy");
            pool.take(template, tmp.resolve("a"));
            await(() -> pool.ready() == 1);
            assertTrue(Files.isDirectory(pool.dir()));
        }
    }

    @Test
    void turnsItselfOffWhenItCannotRenameIntoTheSandboxes() throws Exception {
        Path shm = Path.of("/dev/shm");
        Assumptions.assumeTrue(Files.isWritable(shm) && !Files.getFileStore(shm).equals(Files.getFileStore(tmp)),
                "needs /dev/shm on another filesystem than " + tmp);
        Path elsewhere = Files.createTempDirectory(shm, "pool-test-");
        try (WorkspacePool pool = WorkspacePool.open(templates, 1, this::copy)) {
            pool.take(template, elsewhere.resolve("a"));
            await(() -> pool.ready() == 1);

            assertTrue(pool.take(template, elsewhere.resolve("b")).isEmpty());
            assertNotNull(pool.offReason());
            // a copy the take started before the pool turned off is deleted when it is done
            await(() -> files(pool.dir()).isEmpty());
            assertTrue(pool.take(template, tmp.resolve("c")).isEmpty(), "it stays off");
        } finally {
            try (Stream<Path> left = Files.list(elsewhere)) {
                for (Path p : left.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(elsewhere);
        }
    }

    private static List<Path> files(Path dir) {
        try (Stream<Path> list = Files.list(dir)) {
            return list.toList();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(5);
        }
    }
}
