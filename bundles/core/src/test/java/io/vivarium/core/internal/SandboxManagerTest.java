package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxManagerTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);
    static final Caller BOB = new Caller("bob", Role.ADMIN);

    @TempDir
    Path state;

    private final FakeBackend backend = new FakeBackend();

    private SandboxManager started(FakeBackend b, long serviceId, Duration patience) throws Exception {
        SandboxManager m = new SandboxManager();
        m.backendArrived(entry(b, serviceId));
        m.start(state, "", patience);
        return m;
    }

    private static BackendRegistry.Entry entry(FakeBackend b, long serviceId) {
        return new BackendRegistry.Entry("fake", b, "test.bundle", "1.0.0", serviceId);
    }

    private static ExecRequest exec(String... args) {
        return new ExecRequest(List.of(args), null, null, null, null, null);
    }

    @Test
    void createPersistsARecordAndExecGetsDefaults() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        SandboxInfo info = m.create(ALICE, null);
        assertEquals("running", info.status());
        assertTrue(Files.exists(state.resolve("sandboxes").resolve(info.id()).resolve(SandboxStore.RECORD)));
        m.exec(ALICE, info.id(), exec("echo", "hi"));
        ExecRequest seen = backend.execs.get(0);
        assertEquals(30, seen.timeoutSecs());
        assertEquals("/work", seen.cwd());
        assertEquals("/work", seen.env().get("HOME"));
        assertEquals(1 << 20, seen.maxOutputBytes());
    }

    @Test
    void anotherTenantsSandboxIsNotFound() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(BOB, id)).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.exec(BOB, id, exec("true"))).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.delete(BOB, id)).status());
        assertTrue(m.list(BOB).isEmpty());
        assertEquals(1, m.list(ALICE).size());
    }

    @Test
    void badIdsAreRejectedBeforeAnyLookup() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        for (String bad : List.of("../etc", "SB-1", "a b", "x".repeat(65), "")) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.get(ALICE, bad)).status(), bad);
        }
    }

    @Test
    void deleteRemovesInstanceAndFiles() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        m.delete(ALICE, id);
        assertTrue(backend.running.isEmpty());
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, id)).status());
    }

    @Test
    void restartReadoptsLiveSandboxesAndReportsDeadOnesAsFailed() throws Exception {
        SandboxManager first = started(backend, 1, Duration.ZERO);
        String live = first.create(ALICE, null).id();
        String dead = first.create(ALICE, null).id();
        long deadPid = first.get(ALICE, dead).pid();
        backend.running.remove(deadPid);

        SandboxManager second = started(new FakeBackend(backend.running), 2, Duration.ZERO);
        assertEquals("running", second.get(ALICE, live).status());
        SandboxInfo failed = second.get(ALICE, dead);
        assertEquals("failed", failed.status());
        assertTrue(failed.reason().contains("gone"), failed.reason());
        assertEquals(409, assertThrows(ApiException.class, () -> second.exec(ALICE, dead, exec("true"))).status());
        second.delete(ALICE, dead);
        assertEquals(1, second.list(ALICE).size());
    }

    @Test
    void aCreateCutShortByACrashIsCleanedUpOnStart() throws Exception {
        SandboxManager first = started(backend, 1, Duration.ZERO);
        String id = first.create(ALICE, null).id();
        var store = new SandboxStore(state);
        var r = first.get(ALICE, id);
        store.save(new SandboxRecord(id, "alice", "fake", r.createdAtUnix(), null, SandboxRecord.CREATING,
                new io.vivarium.api.spi.InstanceState(0, Map.of()), io.vivarium.api.SandboxStatus.RUNNING, null));
        SandboxManager second = started(new FakeBackend(backend.running), 2, Duration.ZERO);
        assertTrue(second.list(ALICE).isEmpty());
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
    }

    @Test
    void aFailedCreateLeavesNothingBehind() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        backend.failCreate = ApiException.badRequest("no");
        assertThrows(ApiException.class, () -> m.create(ALICE, null));
        assertTrue(m.list(ALICE).isEmpty());
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(0, dirs.count());
        }
    }

    @Test
    void aRequestWaitsForItsBackendAndSucceedsWhenItComesBack() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ofMinutes(1));
        String id = m.create(ALICE, null).id();
        m.backendLeft(1);
        assertEquals("backend_unavailable", m.get(ALICE, id).status());

        FutureTask<ExecResult> during = new FutureTask<>(() -> m.exec(ALICE, id, exec("echo", "later")));
        awaitWaiting(startThread(during));
        m.backendArrived(entry(new FakeBackend(backend.running), 2));

        assertEquals("echo later", during.get(30, TimeUnit.SECONDS).stdout());
        assertEquals("running", m.get(ALICE, id).status());
    }

    @Test
    void aRequestWhoseBackendDoesNotComeBackGets503WithRetryAfterOnceItsPatienceIsOver() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ofSeconds(3));
        String id = m.create(ALICE, null).id();
        m.backendLeft(1);

        FutureTask<ExecResult> during = new FutureTask<>(() -> m.exec(ALICE, id, exec("true")));
        awaitWaiting(startThread(during));

        ExecutionException failed = assertThrows(ExecutionException.class, () -> during.get(30, TimeUnit.SECONDS));
        ApiException e = assertInstanceOf(ApiException.class, failed.getCause());
        assertEquals(503, e.status());
        assertEquals(2, e.retryAfterSeconds());
        assertTrue(backend.execs.isEmpty());
    }

    @Test
    void aDeleteDuringAnUpgradeWaitsForTheNewBackendInsteadOfBlockingIt() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ofMinutes(1));
        String id = m.create(ALICE, null).id();
        m.backendLeft(1);
        FutureTask<Void> deleting = new FutureTask<>(() -> m.delete(ALICE, id), null);
        awaitWaiting(startThread(deleting));

        // a delete holding the sandbox while it waits would keep re-adoption out for its whole minute
        FutureTask<Void> upgrade = new FutureTask<>(() -> m.backendArrived(entry(new FakeBackend(backend.running), 2)), null);
        startThread(upgrade);
        upgrade.get(30, TimeUnit.SECONDS);
        deleting.get(30, TimeUnit.SECONDS);

        assertTrue(backend.running.isEmpty(), "the new backend destroyed it");
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, id)).status());
    }

    private static Thread startThread(Runnable task) {
        Thread t = new Thread(task, "request");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Returns once {@code request} waits (the only timed wait on its path is the one for the backend). */
    private static void awaitWaiting(Thread request) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (request.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(request.isAlive(), "the request returned without waiting for the backend");
            assertTrue(System.nanoTime() < deadline, "the request never started waiting");
            Thread.onSpinWait();
        }
    }

    @Test
    void unknownBackendAndUnsupportedLimitsAreClearErrors() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        ApiException unknown = assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest("qemu", null)));
        assertEquals(400, unknown.status());
        assertTrue(unknown.getMessage().contains("installed: fake"), unknown.getMessage());
        assertEquals(400, assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest(null, 1))).status());
        assertEquals(64, m.create(ALICE, new CreateSandboxRequest(null, 64)).memoryLimitMib());
    }

    @Test
    void execValidation() throws Exception {
        SandboxManager m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        List<ExecRequest> bad = List.of(
                new ExecRequest(List.of(), null, null, null, null, null),
                new ExecRequest(null, null, null, null, null, null),
                new ExecRequest(List.of("true"), 0, null, null, null, null),
                new ExecRequest(List.of("true"), 3601, null, null, null, null),
                new ExecRequest(List.of("true"), null, Map.of("A=B", "x"), null, null, null),
                new ExecRequest(List.of("true"), null, null, "relative", null, null),
                new ExecRequest(List.of("a\0b"), null, null, null, null, null),
                new ExecRequest(List.of("true"), null, null, null, null, 0));
        for (ExecRequest r : bad) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.exec(ALICE, id, r)).status(), r.toString());
        }
        assertTrue(backend.execs.isEmpty());
    }
}
