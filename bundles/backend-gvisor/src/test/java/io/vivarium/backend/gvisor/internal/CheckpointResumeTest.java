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
import io.vivarium.common.files.FileClones;

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

/** The checkpoint primitive with the real runsc: a container stopped at a checkpoint runs on from it. */
class CheckpointResumeTest {

    @TempDir
    Path tmp;

    private GvisorBackend backend;
    private InstanceSpec spec;
    private GvisorInstance instance;

    @BeforeEach
    void start() {
        GvisorHost.assumeRunsc();
        backend = new GvisorBackend(GvisorHost.settings(tmp));
        spec = new InstanceSpec("cp", tmp.resolve("cp"), null, null, null, null, null);
        instance = (GvisorInstance) backend.create(spec);
    }

    @AfterEach
    void destroy() {
        if (instance != null) {
            backend.destroy(spec, instance.state());
        }
        if (backend != null) {
            backend.close();
        }
    }

    static String sh(SandboxInstance i, String script) {
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c", script), 20,
                Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 16));
        assertEquals(0, r.exitCode(), r.stderr());
        return r.stdout();
    }

    @Test
    void aBackgroundProcessAndTmpRunOnAfterTheRestoreAndTheNewSandboxIsAdopted() throws Exception {
        String bg = sh(instance, "echo kept > /tmp/mark; sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        long pidBefore = instance.record().sandboxPid();
        Path image = tmp.resolve("image");
        Files.createDirectories(image);
        boolean[] ran = {false};

        long pause = backend.checkpointAndResume(instance, image, () -> ran[0] = true,
                OperationContext.until(Instant.now().plusSeconds(60)));

        assertTrue(ran[0], "what runs while the container is stopped");
        assertTrue(pause > 0, "a measured pause");
        assertTrue(Files.isRegularFile(image.resolve("checkpoint.img")), "the checkpoint image");
        assertNotEquals(pidBefore, instance.record().sandboxPid(), "a new sandbox process");
        assertEquals("kept\nalive\n", sh(instance, "cat /tmp/mark; kill -0 " + bg + " && echo alive"));

        backend.close();
        backend = new GvisorBackend(GvisorHost.settings(tmp));
        SandboxInstance adopted = adoptFromCreateTimeState(pidBefore);
        assertEquals(instance.record().sandboxPid(), ((GvisorInstance) adopted).record().sandboxPid(),
                "adoption finds the restored sandbox, not the one core recorded at create");
        assertEquals("alive\n", sh(adopted, "kill -0 " + bg + " && echo alive"));
        instance = (GvisorInstance) adopted;

        Path again = tmp.resolve("again");
        backend.checkpointAndResume(instance, again, () -> { }, OperationContext.until(Instant.now().plusSeconds(60)));
        assertEquals("kept\nalive\n", sh(instance, "cat /tmp/mark; kill -0 " + bg + " && echo alive"),
                "a container adopted after a restore is checkpointed and restored again");
    }

    @Test
    void aRestoredCheckpointBringsBackFilesTmpAndProcessesAndIsListedUntilDeleted() {
        OperationContext context = OperationContext.until(Instant.now().plusSeconds(60));
        String bg = sh(instance, "echo before > /work/f; echo before > /tmp/t; "
                + "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        var info = instance.create("c1", context);
        assertEquals("c1", info.tag());
        assertTrue(info.mode().startsWith("checkpoint+"), info.mode());
        assertEquals(List.of("c1"), instance.list().stream().map(i -> i.tag()).toList());

        sh(instance, "echo after > /work/f; echo new > /work/g; echo after > /tmp/t; kill " + bg);
        assertEquals(instance, instance.restore("c1", context), "restored in place");
        assertEquals("before\nbefore\nalive\nno g\n", sh(instance, "cat /work/f /tmp/t; kill -0 " + bg
                + " && echo alive; test -e /work/g || echo no g"));

        sh(instance, "echo again > /work/f");
        instance.restore("c1", context);
        assertEquals("before\n", sh(instance, "cat /work/f"), "a checkpoint can be restored again");
        assertTrue(instance.delete("c1"));
        assertTrue(instance.list().isEmpty());
        assertTrue(!instance.delete("c1"), "deleted once");
    }

    @Test
    void whenTheWorkAndTheRestoreBothFailTheCallerHearsOfTheWorkWithTheRestoreSuppressed() throws Exception {
        Path image = tmp.resolve("image");
        IOException work = new IOException("the work failed");

        IOException thrown = assertThrows(IOException.class, () -> backend.checkpointAndResume(instance, image, () -> {
            FileClones.deleteTree(image); // so that the restore fails too
            throw work;
        }, OperationContext.until(Instant.now().plusSeconds(60))));

        assertSame(work, thrown);
        assertEquals(1, thrown.getSuppressed().length, "the restore's failure, suppressed");
    }

    @Test
    void aContainerARestoreStartedWithoutRecordingItIsRemovedByDestroy() throws Exception {
        ProcessHandle leaked = restoreAndCrash();

        backend.destroy(spec, instance.state());
        instance = null;

        awaitGone(leaked);
    }

    @Test
    void aContainerARestoreStartedWithoutRecordingItIsRemovedByAdoption() throws Exception {
        ProcessHandle leaked = restoreAndCrash();
        backend.close();
        backend = new GvisorBackend(GvisorHost.settings(tmp));

        assertThrows(InstanceGoneException.class, () -> backend.adopt(spec, instance.state()),
                "the recorded container was checkpointed, so it is gone");

        awaitGone(leaked);
        assertFalse(Files.exists(instance.record().files().restoring()), "the restoring file, once its container is gone");
    }

    /**
     * What a daemon killed during {@link GvisorBackend#restoreFrom} leaves: the recorded container
     * stopped by a checkpoint, and a container restored from it that only the restoring file names.
     */
    private ProcessHandle restoreAndCrash() throws Exception {
        Path image = tmp.resolve("image");
        backend.checkpoint(instance, image, OperationContext.until(Instant.now().plusSeconds(60)));
        ContainerFiles files = instance.record().files();
        String leaked = "vivarium-cp-unrecorded";
        AtomicFiles.write(files.restoring(), leaked.getBytes(StandardCharsets.UTF_8));
        Runsc runsc = new Runsc(GvisorHost.RUNSC);
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
        return backend.adopt(spec, new io.vivarium.api.spi.InstanceState(pidBefore, data));
    }
}
