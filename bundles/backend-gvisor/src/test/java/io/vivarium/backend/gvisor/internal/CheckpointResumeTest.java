package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.files.AtomicFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checkpoint primitive with the real runsc: a checkpoint leaves the container running; a restore replaces it. */
class CheckpointResumeTest {

    @TempDir
    Path tmp;

    private Revision revision;
    private InstanceSpec spec;
    private GvisorInstance instance;

    @BeforeEach
    void start() {
        GvisorHost.assumeRunsc();
        revision = GvisorHost.revision(tmp);
        spec = new InstanceSpec("cp", tmp.resolve("cp"), null, null, null, null, null);
        instance = (GvisorInstance) revision.create(spec);
    }

    @AfterEach
    void destroy() {
        if (instance != null) {
            revision.backend().destroy(spec, instance.state());
        }
        if (revision != null) {
            revision.close();
        }
    }

    private ContainerCheckpointer checkpointer() {
        return revision.runtime().checkpointer();
    }

    static String sh(SandboxInstance i, String script) {
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c", script), 20,
                Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 16));
        assertEquals(0, r.exitCode(), r.stderr());
        return r.stdout();
    }

    @Test
    void aCheckpointLeavesTheContainerRunningInItsSandboxWithTheWorkDoneWhilePaused() throws Exception {
        String bg = sh(instance, "echo kept > /tmp/mark; sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        long pidBefore = instance.record().sandboxPid();
        Path image = tmp.resolve("image");
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        ContainerFiles files = instance.record().files();
        String[] stateDuringWork = {null};

        long pause = checkpointer().checkpointAndResume(instance, image,
                () -> stateDuringWork[0] = runsc.state(files, instance.record().containerId()).orElseThrow().status(),
                OperationContext.until(Instant.now().plusSeconds(60)));

        assertEquals("paused", stateDuringWork[0], "the work runs while the container is frozen");
        assertTrue(pause > 0, "a measured pause");
        assertTrue(Files.isRegularFile(image.resolve("checkpoint.img")), "the checkpoint image");
        assertEquals(pidBefore, instance.record().sandboxPid(), "the same sandbox process runs on");
        assertEquals("running", runsc.state(files, instance.record().containerId()).orElseThrow().status());
        assertEquals("kept\nalive\n", sh(instance, "cat /tmp/mark; kill -0 " + bg + " && echo alive"));
        assertFalse(Files.exists(files.checkpointing()), "the checkpointing mark, once the agent listens again");
    }

    @Test
    void aRestoredSandboxIsAdoptedFromTheStateCoreRecordedAtCreate() throws Exception {
        String bg = sh(instance, "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        long pidBefore = instance.record().sandboxPid();
        OperationContext context = OperationContext.until(Instant.now().plusSeconds(60));
        revision.checkpoints().create(instance, "c1", context);
        revision.checkpoints().restore(instance, "c1", context);
        assertNotEquals(pidBefore, instance.record().sandboxPid(), "a restore runs a new sandbox process");

        revision.close();
        revision = GvisorHost.revision(tmp);
        SandboxInstance adopted = adoptFromCreateTimeState(pidBefore);
        assertEquals(instance.record().sandboxPid(), ((GvisorInstance) adopted).record().sandboxPid(),
                "adoption finds the restored sandbox, not the one core recorded at create");
        assertEquals("alive\n", sh(adopted, "kill -0 " + bg + " && echo alive"));
        instance = (GvisorInstance) adopted;

        checkpointer().checkpointAndResume(instance, tmp.resolve("again"), () -> { }, context);
        assertEquals("alive\n", sh(instance, "kill -0 " + bg + " && echo alive"),
                "a container adopted after a restore is checkpointed again");
    }

    @Test
    void aDaemonKilledDuringACheckpointLeavesAContainerTheNextAdoptResumesAndWakes() throws Exception {
        ContainerFiles files = instance.record().files();
        String containerId = instance.record().containerId();
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        // what checkpointAndResume leaves when killed between its pause and its resume
        AtomicFiles.write(files.checkpointing(), new byte[0]);
        instance.disconnect();
        runsc.signal(files, containerId, "USR1");
        awaitAbsent(files.agentDir().resolve(ContainerFiles.SOCKET_NAME));
        runsc.pause(files, containerId);
        revision.close();
        revision = GvisorHost.revision(tmp);

        instance = (GvisorInstance) revision.backend().adopt(spec, instance.state());

        assertEquals(io.vivarium.api.SandboxStatus.RUNNING, instance.status());
        assertEquals("up\n", sh(instance, "echo up"), "the agent listens again");
        assertFalse(Files.exists(files.checkpointing()));
    }

    @Test
    void aContainerTheCheckpointCouldNotResumeIsReportedPausedAndAResumeRunsItOnWithItsAgent() throws Exception {
        ContainerFiles files = instance.record().files();
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        String containerId = instance.record().containerId();

        // resumed behind the checkpoint's back: its own resume then fails
        IOException thrown = assertThrows(IOException.class, () -> checkpointer().checkpointAndResume(instance,
                tmp.resolve("image"), () -> runsc.resume(files, containerId),
                OperationContext.until(Instant.now().plusSeconds(60))));

        assertTrue(thrown.getMessage().contains("resume"), thrown.getMessage());
        assertEquals(io.vivarium.api.SandboxStatus.PAUSED, instance.status(), "the checkpoint does not know it runs");
        assertTrue(Files.exists(files.checkpointing()), "marked for the resume or the next adopt");
        revision.pause().resume(instance);
        assertEquals(io.vivarium.api.SandboxStatus.RUNNING, instance.status());
        assertEquals("up\n", sh(instance, "echo up"), "the agent listens again");
        assertFalse(Files.exists(files.checkpointing()));
    }

    private static void awaitAbsent(Path path) throws InterruptedException {
        Instant until = Instant.now().plusSeconds(10);
        while (Files.exists(path) && Instant.now().isBefore(until)) {
            Thread.sleep(5);
        }
        assertFalse(Files.exists(path), path + " is still there");
    }

    @Test
    void aRestoredCheckpointBringsBackFilesTmpAndProcessesAndIsListedUntilDeleted() {
        OperationContext context = OperationContext.until(Instant.now().plusSeconds(60));
        GvisorCheckpoints checkpoints = revision.checkpoints();
        String bg = sh(instance, "echo before > /work/f; echo before > /tmp/t; "
                + "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        var info = checkpoints.create(instance, "c1", context);
        assertEquals("c1", info.tag());
        assertTrue(info.mode().startsWith("checkpoint+"), info.mode());
        assertEquals(List.of("c1"), checkpoints.list(instance).stream().map(i -> i.tag()).toList());

        sh(instance, "echo after > /work/f; echo new > /work/g; echo after > /tmp/t; kill " + bg);
        assertSame(instance, checkpoints.restore(instance, "c1", context), "restored in place");
        assertEquals("before\nbefore\nalive\nno g\n", sh(instance, "cat /work/f /tmp/t; kill -0 " + bg
                + " && echo alive; test -e /work/g || echo no g"));

        sh(instance, "echo again > /work/f");
        checkpoints.restore(instance, "c1", context);
        assertEquals("before\n", sh(instance, "cat /work/f"), "a checkpoint can be restored again");
        assertTrue(checkpoints.delete(instance, "c1"));
        assertTrue(checkpoints.list(instance).isEmpty());
        assertTrue(!checkpoints.delete(instance, "c1"), "deleted once");
    }

    @Test
    void whenTheWorkFailsTheCallerHearsOfItAndTheContainerRunsOnWithItsAgent() throws Exception {
        IOException work = new IOException("the work failed");

        IOException thrown = assertThrows(IOException.class, () -> checkpointer().checkpointAndResume(instance,
                tmp.resolve("image"), () -> {
                    throw work;
                }, OperationContext.until(Instant.now().plusSeconds(60))));

        assertSame(work, thrown);
        assertEquals("running", new Runsc(GvisorHost.RUNSC).state(instance.record().files(),
                instance.record().containerId()).orElseThrow().status());
        assertEquals("up\n", sh(instance, "echo up"), "the agent listens again");
    }

    @Test
    void aContainerARestoreStartedWithoutRecordingItIsRemovedByDestroy() throws Exception {
        ProcessHandle leaked = restoreAndCrash();

        revision.backend().destroy(spec, instance.state());
        instance = null;

        awaitGone(leaked);
    }

    @Test
    void aContainerARestoreStartedWithoutRecordingItIsRemovedByAdoption() throws Exception {
        ProcessHandle leaked = restoreAndCrash();
        revision.close();
        revision = GvisorHost.revision(tmp);

        assertThrows(InstanceGoneException.class, () -> revision.backend().adopt(spec, instance.state()),
                "the recorded container was killed for the restore, so it is gone");

        awaitGone(leaked);
        assertFalse(Files.exists(instance.record().files().restoring()), "the restoring file, once its container is gone");
    }

    @Test
    void theContainerARestoreReplacedIsDeletedAfterTheRestoreAnswered() throws Exception {
        OperationContext context = OperationContext.until(Instant.now().plusSeconds(60));
        ContainerFiles files = instance.record().files();
        String replaced = instance.record().containerId();
        revision.checkpoints().create(instance, "c1", context);
        revision.checkpoints().restore(instance, "c1", context);
        revision.checkpoints().restore(instance, "c1", context);

        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        Instant until = Instant.now().plusSeconds(30);
        while ((known(runsc, files, replaced) || listed(files.retired()) > 0) && Instant.now().isBefore(until)) {
            Thread.sleep(20);
        }
        assertFalse(known(runsc, files, replaced), "runsc still knows the replaced container " + replaced);
        assertEquals(0, listed(files.retired()), "every mark goes with its container");
        assertEquals("up\n", sh(instance, "echo up"));
    }

    @Test
    void aReplacedContainerADaemonDidNotDeleteIsDeletedByTheNextAdoptAndTheCurrentOneRunsOn() throws Exception {
        Path image = tmp.resolve("image");
        checkpointer().checkpointAndResume(instance, image, () -> { }, OperationContext.until(Instant.now().plusSeconds(60)));
        ContainerFiles files = instance.record().files();
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        // what a daemon killed between a restore and its deletion of the old container leaves
        String left = "vivarium-cp-retired";
        revision.runtime().retired().mark(files, left);
        runsc.restoreDetached(files, left, image, Duration.ofSeconds(60));
        ProcessHandle leftSandbox = ProcessHandle.of(runsc.state(files, left).orElseThrow().pid()).orElseThrow();
        revision.runtime().retired().mark(files, instance.record().containerId());
        revision.close();
        revision = GvisorHost.revision(tmp);

        instance = (GvisorInstance) revision.backend().adopt(spec, instance.state());

        awaitGone(leftSandbox);
        assertTrue(runsc.state(files, left).isEmpty(), "runsc no longer knows the retired container");
        assertEquals(0, listed(files.retired()), "a mark naming the current container goes without it");
        assertEquals("up\n", sh(instance, "echo up"), "the current container runs on");
    }

    /** Whether runsc knows the container; one it is deleting meanwhile (its state file going) still counts. */
    private static boolean known(Runsc runsc, ContainerFiles files, String containerId) {
        try {
            return runsc.state(files, containerId).isPresent();
        } catch (IOException deleting) {
            return true;
        }
    }

    private static long listed(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (var entries = Files.list(dir)) {
            return entries.count();
        }
    }

    /**
     * What a daemon killed during {@link ContainerCheckpointer#restoreFrom} leaves: the recorded container
     * killed, and a container restored from a checkpoint that only the restoring file names.
     */
    private ProcessHandle restoreAndCrash() throws Exception {
        Path image = tmp.resolve("image");
        checkpointer().checkpointAndResume(instance, image, () -> { }, OperationContext.until(Instant.now().plusSeconds(60)));
        ContainerFiles files = instance.record().files();
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
        ProcessHandle recorded = ProcessHandle.of(instance.record().sandboxPid()).orElseThrow();
        runsc.kill(files, instance.record().containerId());
        awaitGone(recorded);
        String leaked = "vivarium-cp-unrecorded";
        AtomicFiles.write(files.restoring(), leaked.getBytes(StandardCharsets.UTF_8));
        runsc.restoreDetached(files, leaked, image, Duration.ofSeconds(60));
        Runsc.ContainerState state = runsc.state(files, leaked).orElseThrow();
        assertTrue(state.running(), "the unrecorded container runs: " + state.status());
        return ProcessHandle.of(state.pid()).orElseThrow();
    }

    private static void awaitGone(ProcessHandle sandbox) throws Exception {
        try {
            sandbox.onExit().get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("the unrecorded container's sandbox (pid " + sandbox.pid() + ") still runs", e);
        }
    }

    /** Adopts with the state core persisted when the sandbox was created, before the restore. */
    private SandboxInstance adoptFromCreateTimeState(long pidBefore) throws InstanceGoneException {
        Map<String, String> data = new java.util.HashMap<>(instance.state().data());
        data.put("pid", Long.toString(pidBefore));
        return revision.backend().adopt(spec, new io.vivarium.api.spi.InstanceState(pidBefore, data));
    }
}
