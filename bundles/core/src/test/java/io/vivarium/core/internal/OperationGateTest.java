package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.FutureTask;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;

class OperationGateTest {
    private static final Duration LONG = Duration.ofMinutes(1);
    private final OperationGate gate = new OperationGate("sb-1");

    @Test
    void execsRunSideBySide() {
        // with no patience a gate that made the second wait would refuse it (409) at once
        gate.enterShared(Duration.ZERO);
        assertDoesNotThrow(() -> gate.enterShared(Duration.ZERO), "a second exec enters beside the first");
        gate.exitShared();
        gate.exitShared();
        assertDoesNotThrow(() -> gate.enterExclusive("restore", Duration.ZERO), "once both left, a restore enters at once");
        gate.exitExclusive();
    }

    @Test
    void aSecondExclusiveOperationIsRefusedAtOnce() {
        gate.enterExclusive("restore", LONG);
        ApiException e = assertThrows(ApiException.class, () -> gate.enterExclusive("dry-run", LONG));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("a restore is already running"), e.getMessage());
        gate.exitExclusive();
        gate.enterExclusive("dry-run", Duration.ZERO);
    }

    @Test
    void anExecDuringAnExclusiveOperationIsRefusedOnceItsPatienceIsOver() {
        gate.enterExclusive("restore", LONG);
        ApiException e = assertThrows(ApiException.class, () -> gate.enterShared(Duration.ofMillis(50)));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("busy with a restore"), e.getMessage());
    }

    @Test
    void anExecWaitingForAnExclusiveOperationRunsWhenItEnds() throws Exception {
        gate.enterExclusive("restore", LONG);
        CountDownLatch entered = new CountDownLatch(1);
        Thread exec = new Thread(() -> {
            gate.enterShared(LONG);
            entered.countDown();
            gate.exitShared();
        });
        exec.start();
        awaitWaiting(exec);
        assertEquals(1, entered.getCount(), "the exec waits while the restore runs");
        gate.exitExclusive();
        assertTrue(entered.await(30, TimeUnit.SECONDS));
    }

    @Test
    void anExclusiveOperationWaitsForRunningExecsAndNewExecsQueueBehindIt() throws Exception {
        gate.enterShared(Duration.ZERO);
        FutureTask<Void> restore = new FutureTask<>(() -> gate.enterExclusive("restore", LONG), null);
        Thread restoring = new Thread(restore);
        restoring.start();
        awaitWaiting(restoring);
        // an exec arriving now queues behind the restore instead of starving it
        assertEquals(409, assertThrows(ApiException.class, () -> gate.enterShared(Duration.ofMillis(20))).status());
        gate.exitShared();
        restore.get(30, TimeUnit.SECONDS);
        gate.exitExclusive();
    }

    @Test
    void anExclusiveOperationGivesUpOnExecsThatDoNotEndAndLetsOthersIn() {
        gate.enterShared(Duration.ZERO);
        ApiException e = assertThrows(ApiException.class, () -> gate.enterExclusive("restore", Duration.ofMillis(50)));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("1 exec(s) still running"), e.getMessage());
        gate.enterShared(Duration.ZERO);
    }

    @Test
    void aDeleteWaitsForAnExclusiveOperationThenIs409AndNeverWaitsForExecs() throws Exception {
        gate.enterExclusive("restore", LONG);
        ApiException e = assertThrows(ApiException.class, () -> gate.enterEnding("delete", Duration.ofMillis(50)));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("busy with a restore"), e.getMessage());

        FutureTask<Void> delete = new FutureTask<>(() -> gate.enterEnding("delete", LONG), null);
        Thread deleting = new Thread(delete);
        deleting.start();
        awaitWaiting(deleting);
        gate.exitExclusive();
        delete.get(30, TimeUnit.SECONDS);
        assertEquals(409, assertThrows(ApiException.class, () -> gate.enterExclusive("restore", LONG)).status(),
                "nothing exclusive starts while it deletes");
        gate.exitExclusive();

        gate.enterShared(Duration.ZERO);
        gate.enterEnding("delete", Duration.ZERO); // a running exec does not hold a delete up: the delete ends it
        ApiException exec = assertThrows(ApiException.class, () -> gate.enterShared(Duration.ofMillis(20)));
        assertTrue(exec.getMessage().contains("busy with a delete"), exec.getMessage());
    }

    private static void awaitWaiting(Thread t) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (t.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(t.isAlive(), "returned without waiting");
            assertTrue(System.nanoTime() < deadline, "never started waiting");
            Thread.onSpinWait();
        }
    }
}
