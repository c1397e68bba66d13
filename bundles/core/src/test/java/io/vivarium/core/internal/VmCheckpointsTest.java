package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.FakeBackend;
import io.vivarium.testkit.FakeCheckpoints;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints, VM dry-runs and the machine view, over the testkit's fake VM. */
class VmCheckpointsTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);
    static final Caller BOB = new Caller("bob", Role.ADMIN);
    private static final Duration LONG = Duration.ofMinutes(1);

    @TempDir
    Path state;

    private final Set<Long> running = ConcurrentHashMap.newKeySet();
    private final FakeCheckpoints vm = new FakeCheckpoints();
    private final FakeBackend backend = vmBackend();

    private FakeBackend vmBackend() {
        FakeBackend b = new FakeBackend("vmm", running);
        b.checkpoints = vm;
        b.machine = true;
        return b;
    }

    /** The backends whose bundle registers their pause seam too. */
    private final Set<FakeBackend> pausable = ConcurrentHashMap.newKeySet();

    private WholeCore started(FakeBackend b, long serviceId, Duration patience) throws Exception {
        WholeCore m = new WholeCore();
        m.fingerprintArrived(1, TestModes.fakeGuest());
        m.backendArrived(registered(m, b, serviceId, "1.0.0"));
        m.bindStateStores(new FileStores(), java.util.Map.of());
        m.start(state, "", patience);
        return m;
    }

    /** Registers {@code b}'s seams as its bundle (id {@code serviceId}) would, before it; returns its entry. */
    private BackendRegistry.Entry registered(WholeCore m, FakeBackend b, long serviceId, String version) {
        if (b.checkpoints != null) {
            m.seamArrived(b.name(), serviceId, 100 * serviceId + 1, b.checkpoints.checkpoints());
            m.seamArrived(b.name(), serviceId, 100 * serviceId + 2, b.checkpoints.power());
        }
        if (pausable.contains(b)) {
            m.seamArrived(b.name(), serviceId, 100 * serviceId + 3, b.pauseControl());
        }
        return new BackendRegistry.Entry(b.name(), b, "test.vmm", version, serviceId);
    }

    /** Checkpoints VM {@code id} as "t" and starts restoring it, held inside the backend until {@code vm.releaseRestore}. */
    private FutureTask<SandboxInfo> restoreHeldOpen(WholeCore m, String id) throws InterruptedException {
        m.checkpointVm(ALICE, id, tag("t"));
        vm.restoreEntered = new CountDownLatch(1);
        FutureTask<SandboxInfo> restoring = new FutureTask<>(() -> m.restoreVm(ALICE, id, tag("t")));
        new Thread(restoring, "restore").start();
        assertTrue(vm.restoreEntered.await(30, TimeUnit.SECONDS), "the restore reached the backend");
        return restoring;
    }

    private static String newVm(WholeCore m) {
        return m.createVm(ALICE, new CreateSandboxRequest("vmm", null)).id();
    }

    private static DryRunRequest dryRun(String command) {
        return new DryRunRequest(command, List.of("/work"), null);
    }

    private static CheckpointRequest tag(String t) {
        return new CheckpointRequest(t);
    }

    private Path dirOf(String id) {
        return state.resolve("sandboxes").resolve(id);
    }

    private void guestWithWork() {
        vm.files.put("/work/keep", "a");
        vm.files.put("/work/old", "b");
        vm.files.put("/etc/hosts", "outside the paths");
        vm.processes.add("counter");
    }

    private void commandChangesEverything() {
        vm.commands = c -> {
            vm.files.put("/work/new", "n");
            vm.files.put("/work/keep", "changed");
            vm.files.remove("/work/old");
            vm.processes.add("background");
        };
    }

    /** What a {@code kill -9} of the daemon does to the request running at that moment: nothing after it runs. */
    static final class Killed extends Error {
        private static final long serialVersionUID = 1L;
    }

    @Test
    void aDryRunReportsTheChangesAndRevertsTheVmThroughACheckpoint() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        Map<String, String> before = Map.copyOf(vm.files);
        commandChangesEverything();

        DryRunResult r = m.dryRun(ALICE, id, dryRun("make"));

        assertEquals(List.of("make"), vm.commandsRun);
        assertEquals(List.of("/work/new"), r.changes().added());
        assertEquals(List.of("/work/keep"), r.changes().modified());
        assertEquals(List.of("/work/old"), r.changes().deleted());
        assertTrue(r.discarded());
        assertEquals("snapshot", r.revertedVia());
        assertEquals(before, vm.files, "the disk is back");
        assertEquals(Set.of("counter"), vm.processes, "the background process the command started is gone");
        assertTrue(vm.saved.isEmpty(), "the dry-run's checkpoint is deleted");
        assertEquals(1, vm.clockSets.size(), "the guest clock is set after the restore");
        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
    }

    @Test
    void theClockIsSetWhileTheCheckpointIsDeletedWithTheGateHeldAndTheDryRunAnswersAfterBoth() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        CountDownLatch settingClock = new CountDownLatch(1);
        CountDownLatch deleting = new CountDownLatch(1);
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Thread caller = Thread.currentThread();
        vm.onSetTime = () -> {
            settingClock.countDown();
            try {
                seen.add("delete during clock: " + deleting.await(5, TimeUnit.SECONDS));
                seen.add("exec during clock: " + assertThrows(ApiException.class, () -> m.exec(ALICE, id,
                        new ExecRequest(List.of("true"), null, null, null, null, null))).status());
                // the clock is set only once the dry-run, its delete done, waits for it (parked, untimed):
                // a dry-run that answered without it would find the clock not set yet
                seen.add("answer waits for the clock: " + parks(caller));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        vm.beforeDelete = () -> {
            deleting.countDown();
            try {
                seen.add("clock during delete: " + settingClock.await(5, TimeUnit.SECONDS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };

        DryRunResult r = m.dryRun(ALICE, id, dryRun("true"));

        assertTrue(r.discarded());
        assertEquals(Set.of("delete during clock: true", "clock during delete: true", "exec during clock: 409",
                "answer waits for the clock: true"), seen);
        assertEquals(1, vm.clockSets.size(), "the answer comes only after the clock is set");
        assertTrue(vm.saved.isEmpty());
    }

    @Test
    void aClockThatFailsBesideTheDeleteIsSetOnceMoreAfterIt() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        AtomicInteger tries = new AtomicInteger();
        vm.onSetTime = () -> {
            if (tries.incrementAndGet() == 1) {
                throw ApiException.unavailable("the agent did not answer in time", 1);
            }
        };

        DryRunResult r = m.dryRun(ALICE, id, dryRun("true"));

        assertTrue(r.discarded());
        assertEquals(2, tries.get());
        assertEquals(1, vm.clockSets.size());
    }

    @Test
    void aClockTheGuestCannotSetDoesNotUndoARevertOrARestoreThatWorked() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        vm.onSetTime = () -> {
            throw new IllegalStateException("the agent went away");
        };

        DryRunResult r = m.dryRun(ALICE, id, dryRun("true"));

        assertTrue(r.discarded());
        assertEquals("snapshot", r.revertedVia());
        assertTrue(vm.saved.isEmpty(), "the checkpoint is deleted all the same");
        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
        assertEquals("t1", m.checkpointVm(ALICE, id, tag("t1")).tag());
        assertEquals("running", m.restoreVm(ALICE, id, tag("t1")).status());
        assertTrue(vm.clockSets.isEmpty());
    }

    @Test
    void aRestoredPhaseThatCannotBeRecordedStillEndsTheDryRunWithTheCheckpointDeleted() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        Path intents = dirOf(id).resolve(DryRunIntents.FILE);
        vm.commands = command -> {
            // the store cannot write the intent again once the command ran: its file is now a directory
            try {
                Files.delete(intents);
                Files.createDirectory(intents);
                Files.writeString(intents.resolve("x"), "in the way");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };

        DryRunResult r = m.dryRun(ALICE, id, dryRun("true"));

        assertTrue(r.discarded());
        assertTrue(vm.saved.isEmpty(), "deleted, so a start-up has nothing to restore again");
    }

    @Test
    void aCommandThatFailsIsStillReverted() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        Map<String, String> before = Map.copyOf(vm.files);
        vm.commands = c -> {
            vm.files.put("/work/new", "n");
            throw new ApiException(502, "the guest agent stopped answering");
        };
        assertEquals(502, assertThrows(ApiException.class, () -> m.dryRun(ALICE, id, dryRun("make"))).status());
        assertEquals(before, vm.files);
        assertTrue(vm.saved.isEmpty());
        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
    }

    @Test
    void aFailedRestoreIsAnErrorThatSaysTheChangesMayRemainAndKeepsTheCheckpoint() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        commandChangesEverything();
        vm.failRestore = new IllegalStateException("loadvm: error while loading state");

        ApiException e = assertThrows(ApiException.class, () -> m.dryRun(ALICE, id, dryRun("make")));

        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("may still be in it"), e.getMessage());
        String kept = vm.saved.keySet().iterator().next();
        assertTrue(kept.startsWith("dryrun-") && e.getMessage().contains(kept), e.getMessage());
        assertTrue(e.getMessage().contains("POST /v1/sandboxes/" + id + "/checkpoints/" + kept + "/restore"), e.getMessage());
        assertTrue(vm.files.containsKey("/work/new"));
    }

    @Test
    void checkpointsAreListedAndDeletedWithTheOneAFailedDryRunKeptAndASandboxReachesTheSameOnes() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        m.checkpointVm(ALICE, id, tag("t1"));
        m.checkpoint(ALICE, id, tag("t2"));
        vm.saved.put("dryrun-left", new FakeCheckpoints.Saved(new io.vivarium.api.CheckpointInfo("dryrun-left", 0, 1L,
                "fake"), Map.of(), Set.of()));

        assertEquals(List.of("dryrun-left", "t1", "t2"), m.listVmCheckpoints(ALICE, id).stream().map(i -> i.tag())
                .sorted().toList(), "a checkpoint a failed dry-run kept is listed, so that it can be found and freed");
        assertEquals(m.listVmCheckpoints(ALICE, id), m.checkpoints(ALICE, id), "the sandbox view lists the same");
        assertEquals("fake", m.checkpoints(ALICE, id).get(1).mode());

        m.deleteVmCheckpoint(ALICE, id, "t1");
        assertFalse(vm.saved.containsKey("t1"));
        assertEquals(404, assertThrows(ApiException.class, () -> m.deleteVmCheckpoint(ALICE, id, "t1")).status());
        m.deleteCheckpoint(ALICE, id, "dryrun-left");
        assertFalse(vm.saved.containsKey("dryrun-left"), "the one a failed dry-run kept is the caller's to free");
        assertEquals(400, assertThrows(ApiException.class, () -> m.deleteCheckpoint(ALICE, id, "../t2")).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.checkpoints(BOB, id)).status(), "another tenant's");
        assertEquals(404, assertThrows(ApiException.class, () -> m.deleteVmCheckpoint(BOB, id, "t2")).status());

        assertEquals("running", m.restoreCheckpoint(ALICE, id, "t2").status());
        m.deleteCheckpoint(ALICE, id, "t2");
        assertEquals(List.of(), m.checkpoints(ALICE, id));
    }

    @Test
    void aCheckpointIsNotDeletedWhileARestoreRuns() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMillis(200));
        String id = newVm(m);
        FutureTask<SandboxInfo> restoring = restoreHeldOpen(m, id);
        try {
            ApiException busy = assertThrows(ApiException.class, () -> m.deleteVmCheckpoint(ALICE, id, "t"));
            assertEquals(409, busy.status());
            assertTrue(busy.getMessage().contains("a restore is already running"), busy.getMessage());
            assertEquals(409, assertThrows(ApiException.class, () -> m.listVmCheckpoints(ALICE, id)).status());
        } finally {
            vm.releaseRestore.countDown();
        }
        restoring.get(30, TimeUnit.SECONDS);
        assertTrue(vm.saved.containsKey("t"), "kept through the refused delete");
    }

    @Test
    void aProcessSandboxKeepsItsOwnDryRunAndAVmWithoutCheckpointsCannotDryRun() throws Exception {
        backend.checkpoints = null;
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        assertEquals(501, assertThrows(ApiException.class, () -> m.dryRun(ALICE, id, dryRun("make"))).status());
        assertEquals(501, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag("t"))).status());
        assertEquals(501, assertThrows(ApiException.class, () -> m.restoreVm(ALICE, id, tag("t"))).status());
        assertEquals(501, assertThrows(ApiException.class, () -> m.listVmCheckpoints(ALICE, id)).status());
        assertEquals(501, assertThrows(ApiException.class, () -> m.deleteCheckpoint(ALICE, id, "t")).status());
        assertEquals(501, assertThrows(ApiException.class, () -> m.stopVm(ALICE, id)).status());
    }

    @Test
    void aRestoreInPlaceBringsBackTheFilesAndProcessesAndSetsTheClock() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        assertEquals("t1", m.checkpointVm(ALICE, id, tag("t1")).tag());
        vm.files.put("/work/new", "n");
        vm.processes.add("background");
        long pid = m.getVm(ALICE, id).pid();

        SandboxInfo after = m.restoreVm(ALICE, id, tag("t1"));

        assertEquals("running", after.status());
        assertEquals(pid, after.pid());
        assertFalse(vm.files.containsKey("/work/new"));
        assertEquals(Set.of("counter"), vm.processes);
        assertEquals(1, vm.clockSets.size());
        assertTrue(vm.saved.containsKey("t1"), "a restored checkpoint can be restored again");
        assertEquals(409, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag("t1"))).status());
    }

    @Test
    void aRestoreThatRelaunchesRewritesTheRecordSoARestartAdoptsTheNewProcess() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        m.checkpointVm(ALICE, id, tag("t1"));
        long oldPid = m.getVm(ALICE, id).pid();
        vm.relaunch = true;

        long newPid = m.restoreVm(ALICE, id, tag("t1")).pid();

        assertNotEquals(oldPid, newPid);
        assertFalse(running.contains(oldPid));
        assertEquals("echo hi", m.exec(ALICE, id, new ExecRequest(List.of("echo", "hi"), null, null, null, null, null))
                .stdout());
        WholeCore restarted = started(vmBackend(), 2, Duration.ZERO);
        SandboxInfo adopted = restarted.getVm(ALICE, id);
        assertEquals("running", adopted.status());
        assertEquals(newPid, adopted.pid());
    }

    @Test
    void tagsArePlainNamesAndUnknownVmsAndTagsAreNotFound() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        for (String bad : Arrays.asList(null, "", "../../etc/passwd", "a/b", "..", ".hidden", "-x", "a b", "a\nb",
                "x".repeat(65))) {
            assertEquals(400, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag(bad))).status(), bad);
            assertEquals(400, assertThrows(ApiException.class, () -> m.restoreVm(ALICE, id, tag(bad))).status(), bad);
        }
        assertEquals(400, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag("dryrun-1234"))).status(),
                "core's dry-runs' prefix is not the caller's to take");
        assertEquals(400, assertThrows(ApiException.class, () -> m.checkpoint(ALICE, id, tag("dryrun-1234"))).status());
        assertEquals(400, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, null)).status());
        assertTrue(vm.saved.isEmpty(), "no bad tag reached the backend");
        assertEquals(404, assertThrows(ApiException.class, () -> m.restoreVm(ALICE, id, tag("never-taken"))).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.restoreVm(ALICE, "sb-000000000000", tag("t"))).status());
        m.checkpointVm(ALICE, id, tag("t"));
        assertEquals(404, assertThrows(ApiException.class, () -> m.restoreVm(BOB, id, tag("t"))).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.getVm(BOB, id)).status());
        assertTrue(m.listVms(BOB).isEmpty());
        assertEquals(List.of(id), m.listVms(ALICE).stream().map(SandboxInfo::id).toList());
    }

    @Test
    void aVmCreateCountsAgainstMaxSandboxes() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        m.maxSandboxes(1);
        newVm(m);
        ApiException full = assertThrows(ApiException.class, () -> newVm(m));
        assertEquals(503, full.status());
        assertTrue(full.retryAfterSeconds() != null, full.getMessage());
        assertEquals(1, running.size(), "the refused VM never started");
    }

    @Test
    void aVmIsASandboxOfAMachineBackendAndNothingElse() throws Exception {
        FakeBackend processes = new FakeBackend("procs", running);
        WholeCore m = started(backend, 1, Duration.ZERO);
        m.backendArrived(new BackendRegistry.Entry("procs", processes, "test.procs", "1.0.0", 2));
        String vmId = newVm(m);
        String sandboxId = m.create(ALICE, new CreateSandboxRequest("procs", null)).id();

        assertEquals(400, assertThrows(ApiException.class, () -> m.createVm(ALICE, new CreateSandboxRequest(null, null))).status());
        assertEquals(400, assertThrows(ApiException.class, () -> m.createVm(ALICE, new CreateSandboxRequest("procs", null))).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.getVm(ALICE, sandboxId)).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, sandboxId, tag("t"))).status());
        assertEquals(List.of(vmId), m.listVms(ALICE).stream().map(SandboxInfo::id).toList());
        assertEquals(2, m.list(ALICE).size(), "a VM is a sandbox too");
        m.deleteVm(ALICE, vmId);
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, vmId)).status());
    }

    @Test
    void duringARestoreASecondRestoreOrDryRunIs409AnExecWaitsThen409AndReadoptionIsNotBlocked() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMillis(200));
        String id = newVm(m);
        FutureTask<SandboxInfo> restoring = restoreHeldOpen(m, id);
        try {
            ApiException second = assertThrows(ApiException.class, () -> m.restoreVm(ALICE, id, tag("t")));
            assertEquals(409, second.status());
            assertTrue(second.getMessage().contains("a restore is already running"), second.getMessage());
            assertEquals(409, assertThrows(ApiException.class, () -> m.dryRun(ALICE, id, dryRun("true"))).status());
            assertEquals(409, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag("u"))).status());
            ApiException exec = assertThrows(ApiException.class,
                    () -> m.exec(ALICE, id, new ExecRequest(List.of("true"), null, null, null, null, null)));
            assertEquals(409, exec.status());
            assertTrue(exec.getMessage().contains("busy with a restore"), exec.getMessage());

            // a bundle update re-adopts the VM while the restore still runs
            FutureTask<Void> upgrade = new FutureTask<>(() -> m.backendArrived(registered(m, vmBackend(), 2, "1.1.0")),
                    null);
            new Thread(upgrade, "upgrade").start();
            upgrade.get(30, TimeUnit.SECONDS);
        } finally {
            vm.releaseRestore.countDown();
        }
        assertEquals("running", restoring.get(30, TimeUnit.SECONDS).status());
    }

    @Test
    void anExecArrivingDuringARestoreRunsOnceItEnds() throws Exception {
        WholeCore m = started(backend, 1, LONG);
        String id = newVm(m);
        FutureTask<SandboxInfo> restoring = restoreHeldOpen(m, id);
        FutureTask<ExecResult> exec = new FutureTask<>(
                () -> m.exec(ALICE, id, new ExecRequest(List.of("echo", "after"), null, null, null, null, null)));
        Thread execThread = new Thread(exec, "exec");
        execThread.start();
        awaitWaiting(execThread);
        assertFalse(exec.isDone(), "the exec waits for the restore");
        vm.releaseRestore.countDown();
        restoring.get(30, TimeUnit.SECONDS);
        assertEquals("echo after", exec.get(30, TimeUnit.SECONDS).stdout());
    }

    @Test
    void aDryRunKilledAfterItsCommandIsRestoredAndDeletedAtStart() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        Map<String, String> before = Map.copyOf(vm.files);
        vm.commands = c -> {
            vm.files.put("/work/new", "n");
            throw new Killed();
        };
        assertThrows(Killed.class, () -> m.dryRun(ALICE, id, dryRun("make")));
        assertTrue(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)), "the crash left the intent");
        assertEquals(1, vm.saved.size());

        WholeCore restarted = started(vmBackend(), 2, Duration.ZERO);

        assertEquals(before, vm.files, "restored at start-up");
        assertTrue(vm.saved.isEmpty(), "and its checkpoint deleted");
        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
        assertEquals("running", restarted.getVm(ALICE, id).status());
    }

    @Test
    void deletingAVmWithAnUnfinishedDryRunLeavesNoRecordNorDirectory() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        vm.commands = c -> {
            throw new Killed();
        };
        assertThrows(Killed.class, () -> m.dryRun(ALICE, id, dryRun("make")));
        assertTrue(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));

        m.delete(ALICE, id);

        assertFalse(Files.exists(dirOf(id)));
        WholeCore restarted = started(vmBackend(), 2, Duration.ZERO);
        assertTrue(restarted.listVms(ALICE).isEmpty());
    }

    @Test
    void aDryRunKilledWhileItsCheckpointWasTakenLeavesNothingAfterTheStart() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        Map<String, String> before = Map.copyOf(vm.files);
        vm.beforeCreate = () -> {
            throw new Killed();
        };
        assertThrows(Killed.class, () -> m.dryRun(ALICE, id, dryRun("make")));
        assertTrue(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)), "the intent is written before the checkpoint");
        vm.beforeCreate = () -> {
        };

        WholeCore restarted = started(vmBackend(), 2, Duration.ZERO);

        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
        assertEquals(before, vm.files);
        assertTrue(vm.clockSets.isEmpty(), "nothing to restore: the command never ran");
        assertEquals("running", restarted.getVm(ALICE, id).status());
    }

    @Test
    void aDryRunKilledAfterItsRestoreOnlyHasItsCheckpointDeletedAtStart() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        guestWithWork();
        vm.commands = c -> vm.files.put("/work/new", "n");
        vm.failDelete = new IllegalStateException("qemu-img: cannot delete");
        assertTrue(m.dryRun(ALICE, id, dryRun("make")).discarded(), "the VM was reverted; only the delete failed");
        assertEquals(1, vm.saved.size());
        vm.failDelete = null;
        vm.files.put("/work/later", "work done after the dry-run");

        started(vmBackend(), 2, Duration.ZERO);

        assertTrue(vm.saved.isEmpty());
        assertTrue(vm.files.containsKey("/work/later"), "a restored dry-run is not restored again");
        assertFalse(Files.exists(dirOf(id).resolve(DryRunIntents.FILE)));
    }

    @Test
    void aDryRunThatCannotBeFinishedAtStartIsReportedNotKept() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        vm.commands = c -> {
            throw new Killed();
        };
        assertThrows(Killed.class, () -> m.dryRun(ALICE, id, dryRun("make")));
        String tag = vm.saved.keySet().iterator().next();
        vm.failRestore = new IllegalStateException("the checkpoint is corrupt");

        SandboxInfo after = started(vmBackend(), 2, Duration.ZERO).getVm(ALICE, id);

        assertEquals("failed", after.status());
        assertTrue(after.reason().contains(tag) && after.reason().contains("may still be in the sandbox"), after.reason());
    }

    @Test
    void aStoppedVmStaysStoppedAcrossARestartAndStartsAgain() throws Exception {
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        m.checkpointVm(ALICE, id, tag("t"));
        assertEquals("stopped", m.stopVm(ALICE, id).status());
        assertEquals(409, assertThrows(ApiException.class,
                () -> m.exec(ALICE, id, new ExecRequest(List.of("true"), null, null, null, null, null))).status());
        assertEquals(409, assertThrows(ApiException.class, () -> m.stopVm(ALICE, id)).status());

        WholeCore restarted = started(vmBackend(), 2, Duration.ZERO);
        assertEquals("stopped", restarted.getVm(ALICE, id).status());
        assertEquals("running", restarted.startVm(ALICE, id).status());
        assertEquals(409, assertThrows(ApiException.class, () -> restarted.startVm(ALICE, id)).status());
        restarted.stopVm(ALICE, id);
        assertEquals("running", restarted.restoreVm(ALICE, id, tag("t")).status(), "a stopped VM starts from the checkpoint");
    }

    @Test
    void aDeleteDuringARestoreWaitsThen409AndSucceedsOnceItEnds() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMillis(200));
        String id = newVm(m);
        FutureTask<SandboxInfo> restoring = restoreHeldOpen(m, id);
        try {
            ApiException e = assertThrows(ApiException.class, () -> m.deleteVm(ALICE, id));
            assertEquals(409, e.status());
            assertTrue(e.getMessage().contains("busy with a restore") && e.getMessage().contains("retry the delete"),
                    e.getMessage());
            assertEquals(409, assertThrows(ApiException.class, () -> m.delete(ALICE, id)).status(),
                    "the same through /v1/sandboxes");
        } finally {
            vm.releaseRestore.countDown();
        }
        assertEquals("running", restoring.get(30, TimeUnit.SECONDS).status(), "the restore was not disturbed");
        m.deleteVm(ALICE, id);
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, id)).status());
    }

    @Test
    void aDeleteArrivingDuringADryRunRunsOnceTheVmIsReverted() throws Exception {
        WholeCore m = started(backend, 1, LONG);
        String id = newVm(m);
        guestWithWork();
        commandChangesEverything();
        vm.commandEntered = new CountDownLatch(1);
        FutureTask<DryRunResult> dry = new FutureTask<>(() -> m.dryRun(ALICE, id, dryRun("change")));
        new Thread(dry, "dry-run").start();
        assertTrue(vm.commandEntered.await(30, TimeUnit.SECONDS));
        FutureTask<Void> delete = new FutureTask<>(() -> m.delete(ALICE, id), null);
        Thread deleting = new Thread(delete, "delete");
        deleting.start();
        awaitWaiting(deleting);
        assertFalse(delete.isDone(), "the delete waits for the dry-run");
        vm.releaseCommand.countDown();
        assertTrue(dry.get(30, TimeUnit.SECONDS).discarded(), "the dry-run finished its revert first");
        delete.get(30, TimeUnit.SECONDS);
        assertEquals(404, assertThrows(ApiException.class, () -> m.get(ALICE, id)).status());
        assertTrue(vm.saved.isEmpty(), "and deleted its checkpoint");
    }

    @Test
    void aPausedVmRefusesExecAndOperationsUntilResumedAndStaysPausedAcrossARestart() throws Exception {
        pausable.add(backend);
        WholeCore m = started(backend, 1, Duration.ZERO);
        String id = newVm(m);
        m.checkpointVm(ALICE, id, tag("t"));
        assertEquals("paused", m.pause(ALICE, id).status());
        assertEquals("paused", m.pause(ALICE, id).status(), "pausing a paused VM returns it as it is");
        ApiException exec = assertThrows(ApiException.class,
                () -> m.exec(ALICE, id, new ExecRequest(List.of("true"), null, null, null, null, null)));
        assertEquals(409, exec.status());
        assertTrue(exec.getMessage().contains("is paused; resume it first"), exec.getMessage());
        assertEquals(409, assertThrows(ApiException.class, () -> m.dryRun(ALICE, id, dryRun("true"))).status());
        assertEquals(409, assertThrows(ApiException.class, () -> m.checkpointVm(ALICE, id, tag("u"))).status());
        assertEquals(409, assertThrows(ApiException.class, () -> m.restoreVm(ALICE, id, tag("t"))).status());
        assertEquals(409, assertThrows(ApiException.class, () -> m.stopVm(ALICE, id)).status());
        assertEquals(404, assertThrows(ApiException.class, () -> m.pause(BOB, id)).status(), "another tenant's");

        FakeBackend again = vmBackend();
        pausable.add(again);
        again.paused = backend.paused;
        WholeCore restarted = started(again, 2, Duration.ZERO);
        assertEquals("paused", restarted.get(ALICE, id).status(), "a restart finds it paused");
        assertEquals("running", restarted.resume(ALICE, id).status());
        assertEquals("running", restarted.resume(ALICE, id).status(), "resuming a running VM returns it as it is");
        assertEquals(0, restarted.exec(ALICE, id, new ExecRequest(List.of("true"), null, null, null, null, null))
                .exitCode());
    }

    @Test
    void aBackendThatCannotPauseIs501AndAPauseDuringARestoreIs409() throws Exception {
        WholeCore m = started(backend, 1, Duration.ofMillis(200));
        String id = newVm(m);
        assertEquals(501, assertThrows(ApiException.class, () -> m.pause(ALICE, id)).status());
        assertEquals("running", m.get(ALICE, id).status());

        m.seamArrived("vmm", 1, 103, backend.pauseControl());
        FutureTask<SandboxInfo> restoring = restoreHeldOpen(m, id);
        try {
            ApiException e = assertThrows(ApiException.class, () -> m.pause(ALICE, id));
            assertEquals(409, e.status());
            assertTrue(e.getMessage().contains("a restore is already running"), e.getMessage());
        } finally {
            vm.releaseRestore.countDown();
        }
        restoring.get(30, TimeUnit.SECONDS);
        assertEquals("paused", m.pause(ALICE, id).status());
    }

    /** Whether {@code t} parks without a timeout (as a join does) within 30 s. */
    private static boolean parks(Thread t) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (t.getState() != Thread.State.WAITING) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.onSpinWait();
        }
        return true;
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
