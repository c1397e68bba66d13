package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Eval in a gVisor container's warm interpreter (the built root filesystem's python3, a 422 where
 * the root filesystem has none) and {@code runsc pause}/{@code resume}, also across an adoption.
 */
class GvisorEvalAndPauseTest {

    @TempDir
    Path tmp;

    private Revision revision;
    private final CreatedContainers created = new CreatedContainers();

    @AfterEach
    void destroyAll() {
        created.destroyAll(revision);
    }

    private SandboxInstance create(Optional<Path> rootfs, String id) {
        GvisorHost.assumeRunsc();
        if (revision == null) {
            revision = GvisorHost.revision(tmp, rootfs);
        }
        InstanceSpec spec = new InstanceSpec(id, tmp.resolve(id), null, null, null, null, null);
        return created.create(revision, spec);
    }

    private static EvalResult eval(SandboxInstance i, String code, int timeoutSecs) {
        return i.channel().evaluate(code, timeoutSecs);
    }

    @Test
    void evalKeepsStateReturnsErrorsAndOutputAndATimeoutReplacesTheInterpreter() {
        SandboxInstance i = create(Optional.of(GvisorHost.assumeBuiltRootfs()), "eval");
        assertTrue(revision.backend().capabilities().contains(Capability.EVAL));
        assertEquals(null, i.channel().ping().pythonVersion(), "no interpreter before the first eval");
        EvalResult set = eval(i, "x = 41", 10);
        assertEquals(new EvalResult(null, null, 0, "", true), set);
        EvalResult got = eval(i, "print('in gvisor')\nx + 1", 10);
        assertEquals(new EvalResult("42", null, 0, "in gvisor\n", false), got);
        assertEquals("('/work', 65534)", eval(i, "import os\nos.getcwd(), os.getuid()", 10).result());

        EvalResult raised = eval(i, "{}['missing']", 10);
        assertEquals(1, raised.exitCode());
        assertTrue(raised.error().startsWith("Traceback (most recent call last):")
                && raised.error().endsWith("KeyError: 'missing'\n"), raised.error());
        assertEquals("42", eval(i, "x + 1", 10).result(), "an exception leaves the interpreter as it was");

        EvalResult flood = eval(i, "print('y' * (3 << 20))", 10);
        assertTrue(flood.stdout().length() < (3 << 20) && flood.stdout().endsWith("truncated at 1048576 bytes]\n"),
                "stdout capped: " + flood.stdout().length());

        String version = eval(i, "import platform\nplatform.python_version()", 10).result();
        assertEquals(version, "'" + i.channel().ping().pythonVersion() + "'", "ping names the interpreter");

        EvalResult runaway = eval(i, "while True: pass", 1);
        assertEquals(124, runaway.exitCode(), runaway.toString());
        assertTrue(runaway.error().contains("its state (variables, imports) is gone"), runaway.error());
        assertEquals("False", eval(i, "'x' in globals()", 10).result(), "a fresh interpreter answers");
    }

    @Test
    void aRootFilesystemWithoutPythonAnswers422() throws Exception {
        Path bare = tmp.resolve("bare-rootfs");
        for (String d : List.of("usr", "proc", "dev", "tmp", "etc", "run/vivarium", "opt/vivarium", "work")) {
            Files.createDirectories(bare.resolve(d));
        }
        SandboxInstance i = create(Optional.of(bare), "nopython");
        ApiException e = assertThrows(ApiException.class, () -> eval(i, "1 + 1", 10));
        assertEquals(422, e.status(), e.getMessage());
        assertTrue(e.getMessage().contains("needs a Python 3 interpreter"), e.getMessage());
        assertEquals(null, i.channel().ping().pythonVersion(), "the agent still answers, with no interpreter to name");
    }

    @Test
    void pauseFreezesTheContainerAcrossAnAdoptionAndResumeRunsItOn() throws Exception {
        SandboxInstance i = create(Optional.empty(), "pause");
        assertEquals(0, i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c",
                "(while :; do echo x >> /work/ticks; sleep 0.05; done) >/dev/null 2>&1 </dev/null &"), 10,
                Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 10)).exitCode());
        Path ticks = ((GvisorInstance) i).record().files().workspace().resolve("ticks");
        awaitGrowth(ticks);

        revision.pause().pause(i);
        assertEquals(SandboxStatus.PAUSED, i.status());
        long frozen = Files.size(ticks);
        awaitLinesOfATwinLoop(6);
        assertEquals(frozen, Files.size(ticks), "nothing runs in a paused container");

        InstanceState state = i.state();
        revision.close();
        revision = GvisorHost.revision(tmp, Optional.empty());
        SandboxInstance adopted = revision.backend().adopt(created.spec(0), state);
        created.adopted(0, adopted);
        assertEquals(SandboxStatus.PAUSED, adopted.status(), "runsc keeps it paused for the next daemon");

        revision.pause().resume(adopted);
        assertEquals(SandboxStatus.RUNNING, adopted.status());
        awaitGrowth(ticks);
        assertTrue(adopted.channel().ping().pong());
    }

    @Test
    void aPausedContainerIsDestroyed() throws Exception {
        GvisorInstance i = (GvisorInstance) create(Optional.empty(), "paused-delete");
        revision.pause().pause(i);
        long pid = i.record().sandboxPid();
        created.destroy(revision, 0);
        assertTrue(ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true), "the sandbox process is gone");
        assertFalse(Files.exists(i.record().files().runscRoot()), "runsc's state root is removed");
    }

    /**
     * Runs the container's loop on the host until it has written {@code lines} lines: a span in which
     * the container's, were it running, would have written about as many, however busy the machine.
     */
    private void awaitLinesOfATwinLoop(int lines) throws Exception {
        Path twin = tmp.resolve("twin-ticks");
        Process loop = new ProcessBuilder("/bin/sh", "-c", "while :; do echo x >> \"$1\"; sleep 0.05; done", "sh",
                twin.toString()).start();
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!Files.exists(twin) || Files.size(twin) < 2L * lines) {
                assertTrue(System.nanoTime() < deadline, "the twin loop on the host wrote " + twin + " too slowly");
                Thread.sleep(20);
            }
        } finally {
            loop.destroyForcibly();
        }
    }

    /** Waits (up to 10 s) until the file grows: the loop writing it runs. */
    private static void awaitGrowth(Path file) throws Exception {
        long before = Files.exists(file) ? Files.size(file) : 0;
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!Files.exists(file) || Files.size(file) <= before) {
            assertTrue(System.nanoTime() < deadline, file + " does not grow: the container does not run");
            Thread.sleep(20);
        }
    }
}
