package io.vivarium.common.testpoints;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class TestPointsTest {
    @TempDir
    Path dir;

    @Test
    void haltsAtThePointOrOnlyAtItsNthReach() {
        AtomicInteger halts = new AtomicInteger();
        TestPoints every = new TestPoints("fork.child", null, null, () -> {
            halts.incrementAndGet();
            throw new IllegalStateException("halted");
        });
        assertThrows(IllegalStateException.class, () -> every.reached("fork.child"));
        assertEquals(1, halts.get());

        halts.set(0);
        TestPoints third = new TestPoints("fork.child#3", null, null, halts::incrementAndGet);
        for (int i = 0; i < 3; i++) {
            third.reached("fork.child");
        }
        assertEquals(1, halts.get(), "only the third reach");
    }

    @Test
    void nothingPassesATestPointOnceTheHaltStarted() throws Exception {
        TestPoints third = new TestPoints("create.made#3", null, null, () -> { });
        third.reached("create.made");
        third.reached("create.recorded");
        Thread before = Thread.ofPlatform().start(() -> third.reached("create.made"));
        before.join(Duration.ofSeconds(10));
        assertFalse(before.isAlive(), "a reach before the halting one passes");
        third.reached("create.made");
        for (String point : List.of("create.made", "create.recorded")) {
            Thread late = Thread.ofPlatform().start(() -> third.reached(point));
            while (late.getState() != Thread.State.TIMED_WAITING) {
                Thread.onSpinWait();
            }
            assertTrue(late.isAlive(), point + " waits for the halt");
            late.interrupt();
            late.join(Duration.ofSeconds(10));
            assertFalse(late.isAlive(), "a waiting reach ends when interrupted");
        }
    }

    @Test
    void holdsOnlyTheNthReachUntilItsFileExists() throws Exception {
        Path gate = dir.resolve("gate");
        TestPoints points = new TestPoints(null, null, "fork.child#2:" + gate, () -> {
            throw new AssertionError("no halt asked for");
        });
        points.reached("fork.child");
        Thread second = Thread.ofPlatform().start(() -> points.reached("fork.child"));
        while (second.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(second.isAlive(), "the second reach went on without " + gate);
            Thread.onSpinWait();
        }
        Files.createFile(gate);
        assertTrue(second.join(Duration.ofSeconds(10)), "the second reach goes on once " + gate + " exists");
        points.reached("fork.child");
    }
}
