package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Capability;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.NodeId;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.FakeBackend;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxManagerTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);
    static final Caller BOB = new Caller("bob", Role.ADMIN);

    @TempDir
    Path state;

    private final FakeBackend backend = new FakeBackend();

    private WholeCore started(FakeBackend b, long serviceId, Duration patience) throws Exception {
        WholeCore m = new WholeCore();
        m.backendArrived(entry(b, serviceId));
        m.bindStateStores(new FileStores(), java.util.Map.of());
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
        WholeCore m = started(backend, 1, Duration.ZERO);
        SandboxInfo info = m.create(ALICE, null);
        assertEquals("running", info.status());
        assertTrue(Files.exists(state.resolve("sandboxes").resolve(info.id()).resolve(StateCollections.RECORD)));
        m.exec(ALICE, info.id(), exec("echo", "hi"));
        ExecRequest seen = backend.execs.get(0);
        assertEquals(30, seen.timeoutSecs());
        assertEquals("/work", seen.cwd());
        assertEquals("/work", seen.env().get("HOME"));
        assertEquals(1 << 20, seen.maxOutputBytes());
    }

    @Test
    void anotherTenantsSandboxIsNotFound() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(BOB, id)).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.exec(BOB, id, exec("true"))).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.delete(BOB, id)).status());
        assertTrue(m.list(BOB).isEmpty());
        assertEquals(1, m.list(ALICE).size());
    }

    @Test
    void badIdsAreRejectedBeforeAnyLookup() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        for (String bad : List.of("../etc", "SB-1", "a b", "x".repeat(65), "")) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.get(ALICE, bad)).status(), bad);
        }
    }

    @Test
    void deleteRemovesInstanceAndFiles() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        m.delete(ALICE, id);
        assertTrue(backend.running.isEmpty());
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, id)).status());
    }

    @Test
    void restartReadoptsLiveSandboxesAndReportsDeadOnesAsFailed() throws Exception {
        WholeCore first = started(backend, 1, Duration.ZERO);
        String live = first.create(ALICE, null).id();
        String dead = first.create(ALICE, null).id();
        long deadPid = first.get(ALICE, dead).pid();
        backend.running.remove(deadPid);

        WholeCore second = started(new FakeBackend(backend.running), 2, Duration.ZERO);
        assertEquals("running", second.get(ALICE, live).status());
        SandboxInfo failed = second.get(ALICE, dead);
        assertEquals("failed", failed.status());
        assertTrue(failed.reason().contains("gone"), failed.reason());
        assertEquals(409, assertThrows(ApiException.class, () -> second.exec(ALICE, dead, exec("true"))).status());
        second.delete(ALICE, dead);
        assertEquals(1, second.list(ALICE).size());
    }

    @Test
    void anInstanceThatSaysItStoppedIsStoppedWithItsReasonAndRefusesExecs() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        backend.stopped.put(id, "the guest powered off");

        SandboxInfo info = m.get(ALICE, id);
        assertEquals("stopped", info.status());
        assertEquals("the guest powered off", info.reason());
        ApiException e = assertThrows(ApiException.class, () -> m.exec(ALICE, id, exec("true")));
        assertEquals(409, e.status());
        assertTrue(e.getMessage().contains("is stopped (the guest powered off)"), e.getMessage());
        m.delete(ALICE, id);
    }

    @Test
    void aSandboxThatDiesWhileAttachedFailsWithTheReasonItsInstanceGives() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        long pid = m.get(ALICE, id).pid();
        backend.running.remove(pid);

        assertEquals("failed", m.get(ALICE, id).status(), "a dead instance is failed before any request reaches it");
        assertEquals(409, assertThrows(ApiException.class, () -> m.exec(ALICE, id, exec("true"))).status());
        SandboxInfo failed = m.get(ALICE, id);
        assertEquals("failed", failed.status());
        assertEquals("the test ended pid " + pid, failed.reason());
    }

    @Test
    void aCreateCutShortByACrashIsCleanedUpOnStart() throws Exception {
        WholeCore first = started(backend, 1, Duration.ZERO);
        String id = first.create(ALICE, null).id();
        var store = FileStateStore.open(state, NodeId.readOrCreate(state), StateCollections.ALL);
        var r = first.get(ALICE, id);
        long revision = store.get(StateCollections.SANDBOXES, id).orElseThrow().revision();
        store.put(StateCollections.SANDBOXES, id, new SandboxRecord(id, "alice", "fake", r.createdAtUnix(), null, null, null,
                null, null, SandboxRecord.CREATING, new InstanceState(0, Map.of()), SandboxStatus.RUNNING, null, null, null, null, null, null, null, null, null, null, null, null), revision);
        WholeCore second = started(new FakeBackend(backend.running), 2, Duration.ZERO);
        assertTrue(second.list(ALICE).isEmpty());
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
    }

    @Test
    void aRecordWrittenBeforeTheStoreHadEnvelopesIsReadoptedAndDeleted() throws Exception {
        String live = started(backend, 1, Duration.ZERO).create(ALICE, null).id();
        Path record = state.resolve("sandboxes").resolve(live).resolve(StateCollections.RECORD);
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        Files.write(record, json.writeValueAsBytes(json.readTree(record.toFile()).get("body")));

        WholeCore second = started(new FakeBackend(backend.running), 2, Duration.ZERO);

        assertEquals("running", second.get(ALICE, live).status());
        second.delete(ALICE, live);
        assertFalse(Files.exists(record.getParent()));
    }

    /**
     * A directory without a record that cannot be removed (a mount in it: EBUSY, as a sandbox process
     * that outlived a killed daemon holds one) is left for the next start; core starts all the same
     * and removes it once it can. Needs root, for the bind mount.
     */
    @Test
    void anOrphanDirectoryThatCannotBeRemovedYetKeepsNoStartFromGoingOn() throws Exception {
        Assumptions.assumeTrue("0".equals(new String(new ProcessBuilder("id", "-u").start().getInputStream().readAllBytes()).strip()),
                "a bind mount makes the directory busy: needs root");
        Path work = Files.createDirectories(state.resolve("sandboxes").resolve("sb-orphan").resolve("work"));
        run("mount", "--bind", work.toString(), work.toString());
        try {
            WholeCore m = started(backend, 1, Duration.ZERO);
            assertTrue(m.list(ALICE).isEmpty(), "core started");
            assertTrue(Files.exists(work), "what cannot go yet stays");
        } finally {
            run("umount", work.toString());
        }
        started(new FakeBackend(backend.running), 2, Duration.ZERO);
        assertFalse(Files.exists(work.getParent()), "the next start removes it");
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), String.join(" ", command) + ": " + out);
    }

    @Test
    void aFailedCreateLeavesNothingBehind() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        backend.failCreate = ApiException.badRequest("no");
        assertThrows(ApiException.class, () -> m.create(ALICE, null));
        assertTrue(m.list(ALICE).isEmpty());
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(0, dirs.count());
        }
    }

    @Test
    void aRequestWaitsForItsBackendAndSucceedsWhenItComesBack() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMinutes(1));
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
    void aRequestAdoptsItsOwnSandboxWhileTheSweepIsStillAtAnother() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMinutes(1));
        String a = m.create(ALICE, null).id();
        String b = m.create(ALICE, null).id();
        m.backendLeft(1);
        FakeBackend next = new FakeBackend(backend.running);
        CountDownLatch sweepAdopting = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> sweepStuckAt = new CopyOnWriteArrayList<>();
        SandboxBackend slowSweep = new SandboxBackend() {
            public String name() { return next.name(); }
            public Set<String> capabilities() { return next.capabilities(); }
            public Availability availability() { return next.availability(); }
            public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
                return next.create(spec, storage, context);
            }
            public void destroy(InstanceSpec spec, InstanceState state) { next.destroy(spec, state); }
            public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
                if (Thread.currentThread().getName().equals("upgrade") && sweepStuckAt.isEmpty()) {
                    sweepStuckAt.add(spec.id());
                    sweepAdopting.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return next.adopt(spec, state);
            }
        };
        Thread upgrade = new Thread(() -> m.backendArrived(new BackendRegistry.Entry("fake", slowSweep, "b", "2", 2)),
                "upgrade");
        upgrade.setDaemon(true);
        upgrade.start();
        assertTrue(sweepAdopting.await(30, TimeUnit.SECONDS));
        String other = sweepStuckAt.get(0).equals(a) ? b : a;

        FutureTask<ExecResult> request = new FutureTask<>(() -> m.exec(ALICE, other, exec("echo", "adopted")));
        startThread(request);
        try {
            assertEquals("echo adopted", request.get(10, TimeUnit.SECONDS).stdout(),
                    "the request did not wait for the sweep, which is still adopting " + sweepStuckAt.get(0));
        } finally {
            release.countDown();
        }
        upgrade.join(TimeUnit.SECONDS.toMillis(30));
        assertEquals("running", m.get(ALICE, a).status());
        assertEquals("running", m.get(ALICE, b).status());
    }

    @Test
    void aRequestWhoseBackendDoesNotComeBackGets503WithRetryAfterOnceItsPatienceIsOver() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofSeconds(3));
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
    void whileItsBackendIsAwayAnInstanceWhoseChannelOutlivesItServesGuestCallsUntilTheNextOneOrThePatience()
            throws Exception {
        backend.channelOutlivesBackend = true;
        WholeCore m = started(backend, 1, Duration.ofSeconds(2));
        String id = m.create(ALICE, null).id();
        String other = m.create(ALICE, null).id();
        m.backendLeft(1);

        assertEquals("echo during", m.exec(ALICE, id, exec("echo", "during")).stdout(),
                "served at once through the instance its backend left");
        assertEquals("backend_unavailable", m.get(ALICE, id).status(), "listed as it is");
        assertEquals(501, assertThrows(ApiException.class, () -> m.eval(ALICE, id, new EvalRequest("1", 5))).status(),
                "eval reaches the instance that left too (this fake's channel has no interpreter), not a 503");
        FakeBackend next = new FakeBackend(backend.running);
        next.channelOutlivesBackend = true;
        m.backendArrived(entry(next, 2));
        m.exec(ALICE, id, exec("echo", "after"));
        assertEquals(1, backend.execs.size(), "the instance that left serves no more once the next revision is here");
        assertEquals(1, next.execs.size());

        m.backendLeft(2);
        Sandbox kept = m.core().sandboxes().find(ALICE, other);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (kept.leaving() != null) {
            assertTrue(System.nanoTime() < deadline, "the instance that left is still kept 30 s after its 2 s patience");
            Thread.sleep(10);
        }
        ApiException e = assertThrows(ApiException.class, () -> m.exec(ALICE, other, exec("true")));
        assertEquals(503, e.status(), "past the patience the instance that left is let go of");
        assertEquals(1, next.execs.size());
    }

    @Test
    void aDeleteDuringAnUpgradeWaitsForTheNewBackendInsteadOfBlockingIt() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMinutes(1));
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
        WholeCore m = started(backend, 1, Duration.ZERO);
        ApiException unknown = assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest("qemu", null)));
        assertEquals(400, unknown.status());
        assertTrue(unknown.getMessage().contains("installed: fake"), unknown.getMessage());
        assertEquals(400, assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest(null, 1))).status());
        assertEquals(64, m.create(ALICE, new CreateSandboxRequest(null, 64)).memoryLimitMib());
    }

    @Test
    void pidsAndDiskLimitsAreCheckedAndReachTheBackend() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        ApiException pids = assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest(null, null, null, null, 2, null)));
        assertEquals(400, pids.status());
        assertTrue(pids.getMessage().startsWith("pids_limit must be between 16 and "), pids.getMessage());
        ApiException disk = assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, 0)));
        assertEquals(400, disk.status());
        assertTrue(disk.getMessage().startsWith("disk_limit_mib must be between 16 and "), disk.getMessage());
        ApiException unenforced = assertThrows(ApiException.class,
                () -> m.create(ALICE, new CreateSandboxRequest(null, null, null, null, 100, null)));
        assertEquals(400, unenforced.status());
        assertTrue(unenforced.getMessage().startsWith("pids_limit is not supported by backend fake"), unenforced.getMessage());
        assertTrue(assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, 256)))
                .getMessage().startsWith("disk_limit_mib is not supported by backend fake"));
        assertTrue(backend.creates.isEmpty(), "a bad or unenforceable limit never reaches the backend");

        backend.capabilities = Set.of(Capability.EXEC, Capability.MEMORY_LIMIT, Capability.PIDS_LIMIT, Capability.DISK_LIMIT);
        m.create(ALICE, new CreateSandboxRequest(null, null, null, null, 100, 256));
        assertEquals(100, backend.creates.get(0).pidsLimit());
        assertEquals(256, backend.creates.get(0).diskLimitMib());
        m.create(ALICE, null);
        assertEquals(null, backend.creates.get(1).pidsLimit(), "no limit asked: the backend's default");
        assertEquals(null, backend.creates.get(1).diskLimitMib());
    }

    @Test
    void execValidation() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
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

    @Test
    void withOneBackendACreateThatNamesNoneUsesIt() throws Exception {
        WholeCore m = new WholeCore();
        m.bindStateStores(new FileStores(), java.util.Map.of());
        m.start(state, "", Duration.ofSeconds(5));
        FakeBackend only = new FakeBackend("only", java.util.concurrent.ConcurrentHashMap.newKeySet());
        // registers while the create waits for a first backend: no 5 s wait for a backend it never names
        CompletableFuture<SandboxInfo> created = CompletableFuture.supplyAsync(() -> m.create(ALICE, null));
        m.backendArrived(new BackendRegistry.Entry("only", only, "b", "1", 7));
        assertEquals("only", created.get().backend());
        assertEquals("only", m.create(ALICE, new CreateSandboxRequest(null, null)).backend());
    }

    @Test
    void withSeveralBackendsTheConfiguredDefaultIsUsedElseTheCallerMustChoose() throws Exception {
        FakeBackend other = new FakeBackend("other", backend.running);
        WholeCore undecided = started(backend, 1, Duration.ZERO);
        undecided.backendArrived(new BackendRegistry.Entry("other", other, "b", "1", 2));
        ApiException choose = assertThrows(ApiException.class, () -> undecided.create(ALICE, null));
        assertEquals(400, choose.status());
        assertTrue(choose.getMessage().contains("choose one of: fake, other"), choose.getMessage());
        assertEquals("other", undecided.create(ALICE, new CreateSandboxRequest("other", null)).backend());

        WholeCore configured = new WholeCore();
        configured.backendArrived(entry(backend, 1));
        configured.backendArrived(new BackendRegistry.Entry("other", other, "b", "1", 2));
        configured.bindStateStores(new FileStores(), java.util.Map.of());
        configured.start(state.resolve("configured"), "other", Duration.ZERO);
        assertEquals("other", configured.create(ALICE, null).backend());
        assertEquals("fake", configured.create(ALICE, new CreateSandboxRequest("fake", null)).backend());
    }

    @Test
    void vcpusAndImageReachOnlyABackendThatHonoursThem() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        ApiException vcpus = assertThrows(ApiException.class,
                () -> m.create(ALICE, new CreateSandboxRequest(null, null, 2, null, null, null)));
        assertEquals(400, vcpus.status());
        assertTrue(vcpus.getMessage().contains("vcpus is not supported by backend fake"), vcpus.getMessage());
        assertEquals(400, assertThrows(ApiException.class,
                () -> m.create(ALICE, new CreateSandboxRequest(null, null, null, "debian", null, null))).status());
        assertTrue(backend.creates.isEmpty());

        backend.machine = true;
        backend.capabilities = Set.of(Capability.EXEC, Capability.MEMORY_LIMIT, Capability.IMAGE);
        for (CreateSandboxRequest bad : List.of(new CreateSandboxRequest(null, null, 0, null, null, null),
                new CreateSandboxRequest(null, null, 257, null, null, null), new CreateSandboxRequest(null, null, null, "../etc", null, null),
                new CreateSandboxRequest(null, null, null, "", null, null))) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.create(ALICE, bad)).status(), bad.toString());
        }
        SandboxInfo info = m.create(ALICE, new CreateSandboxRequest(null, null, 2, "debian-12", null, null));
        assertEquals(2, info.vcpus());
        assertEquals("debian-12", info.image());
        InstanceSpec spec = backend.creates.get(0);
        assertEquals(2, spec.vcpus());
        assertEquals("debian-12", spec.image());
        assertEquals(2, started(new FakeBackend(backend.running), 2, Duration.ZERO).get(ALICE, info.id()).vcpus(),
                "persisted across a restart");
    }

    @Test
    void aRefusalForLackOfCapacityIsA503WithRetryAfter() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        backend.failCreate = ApiException.noCapacity("all 4 vCPUs are taken; retry when a VM ends", 10);
        ApiException e = assertThrows(ApiException.class, () -> m.create(ALICE, null));
        assertEquals(503, e.status());
        assertEquals(10, e.retryAfterSeconds());
        assertTrue(m.list(ALICE).isEmpty());
    }

    @Test
    void oneSandboxShowsItsUsageAndBackendsTheirDetails() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        assertEquals(4096L, m.get(ALICE, id).usage().residentMemoryBytes());
        assertEquals(null, m.list(ALICE).get(0).usage(), "a listing does not measure every sandbox");
        assertEquals(Map.of("agent", "in-memory"), m.backends().get(0).details());
        backend.failDetails = true;
        assertEquals(Map.of(), m.backends().get(0).details(), "a backend failing to say breaks nothing");
    }

    @Test
    void filesGoThroughTheChannelWithCheckedPaths() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = m.create(ALICE, null).id();
        m.writeFile(ALICE, id, "/work//notes.txt", new byte[] { 0, 1, 2 });
        assertTrue(backend.files.containsKey("/work/notes.txt"), backend.files.keySet().toString());
        assertEquals(3, m.readFile(ALICE, id, "/work/notes.txt").length);
        assertEquals(404, assertThrows(ApiException.class, () -> m.readFile(ALICE, id, "/work/none")).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.readFile(BOB, id, "/work/notes.txt")).status());
        for (String bad : Arrays.asList(null, "", "work/x", "/work/../etc/passwd", "/work/a\nb", "/", "/work/",
                "/" + "a".repeat(5000))) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.readFile(ALICE, id, bad)).status(), bad);
            assertEquals(400, assertThrows(ApiException.class, () -> m.writeFile(ALICE, id, bad, new byte[0])).status(),
                    bad);
        }
        assertEquals(413, assertThrows(ApiException.class,
                () -> m.writeFile(ALICE, id, "/work/big", new byte[SandboxService.MAX_FILE_BYTES + 1])).status());
        assertFalse(backend.files.containsKey("/work/big"));
    }

    @Test
    void theObserverIsToldOfCreatesByOutcomeDeletesLocksAndStateWrites() throws Exception {
        List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        WholeCore m = started(backend, 1, Duration.ZERO);
        m.bindObserver(new RuntimeObserver() {
            @Override
            public void sandboxCreated(CreateOutcome outcome) {
                seen.add("create " + outcome);
            }

            @Override
            public void sandboxDeleted() {
                seen.add("delete");
            }

            @Override
            public void lifecycleLockReleased(long waitNanos, long heldNanos) {
                seen.add(waitNanos >= 0 && heldNanos >= 0 ? "lock" : "negative lock times");
            }

            @Override
            public void stateWritten(long nanos) {
                seen.add("write");
            }
        });
        String id = m.create(ALICE, null).id();
        assertEquals(List.of("write", "write", "lock", "create OK"), seen);
        seen.clear();
        m.delete(ALICE, id);
        assertEquals(List.of("delete", "lock"), seen);
        seen.clear();

        backend.failCreate = new ApiException(503, "host is full", 5, null);
        assertThrows(ApiException.class, () -> m.create(ALICE, null));
        backend.failCreate = new IllegalStateException("boom");
        assertThrows(IllegalStateException.class, () -> m.create(ALICE, null));
        backend.failCreate = null;
        assertThrows(ApiException.class, () -> m.create(ALICE, new CreateSandboxRequest("no-such-backend", null)));
        assertEquals(List.of("create REFUSED", "create FAILED", "create INVALID"),
                seen.stream().filter(e -> e.startsWith("create")).toList());
        assertEquals(2, seen.stream().filter("lock"::equals).count(), "each failed create took and released the lock");
    }

    @Test
    void theCensusHasEveryTenantsSandboxesWithTheirUsage() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String a = m.create(ALICE, null).id();
        String b = m.create(BOB, null).id();
        List<SandboxInfo> all = m.census();
        assertEquals(java.util.Set.of(a, b), all.stream().map(SandboxInfo::id).collect(java.util.stream.Collectors.toSet()));
        assertTrue(all.stream().allMatch(s -> s.usage() != null), all.toString());
        m.delete(BOB, b);
        assertEquals(List.of(a), m.census().stream().map(SandboxInfo::id).toList());
    }
}
