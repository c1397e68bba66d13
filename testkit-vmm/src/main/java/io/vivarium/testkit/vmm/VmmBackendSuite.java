package io.vivarium.testkit.vmm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.CheckpointsSuite;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The backend and checkpoints conformance suites for a backend of VMM guests reached over vsock
 * (the kit's {@code VmmBackend} and {@code VmmCheckpoints}): each new backend is a new revision of its runtime, the one before let go of
 * first, as OSGi deactivates it; a crash kills the VMM (the pid its state records), and a sandbox
 * process kills the agent, which the guest's /init starts again.
 */
public abstract class VmmBackendSuite extends CheckpointsSuite {

    /** A revision of a VMM backend's runtime: its backend, its pause, power and checkpoints seams, and how it lets go at deactivation. */
    public record Revision(SandboxBackend backend, PauseControl pause, PowerControl power, Checkpoints checkpoints,
            Runnable letGo) {
    }

    /** The guest's workspace disk in its directory (the kit's {@code VmmLauncher.WORKSPACE}). */
    private static final String WORKSPACE = "workspace.ext4";
    private static final List<Revision> REVISIONS = new CopyOnWriteArrayList<>();

    /** A new revision of the backend under test. */
    protected abstract Revision newRevision();

    @Override
    protected final SandboxBackend newBackend(Path stateDir) {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().letGo().run();
        }
        Revision next = newRevision();
        REVISIONS.add(next);
        return next.backend();
    }

    @AfterAll
    static void letGo() {
        if (!REVISIONS.isEmpty()) {
            REVISIONS.getLast().letGo().run();
        }
        REVISIONS.clear();
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return revisionOf(backend).pause();
    }

    @Override
    protected Checkpoints checkpoints(SandboxBackend backend) {
        return revisionOf(backend).checkpoints();
    }

    private static Revision revisionOf(SandboxBackend backend) {
        return REVISIONS.stream().filter(r -> r.backend() == backend).findFirst().orElseThrow();
    }

    /**
     * A stop ends the VMM and keeps the workspace disk; the next revision adopts the guest stopped
     * (not gone), and a start boots it again: it answers, under a VMM of its own.
     */
    @Test
    void aStoppedGuestKeepsItsDiskIsAdoptedStoppedAndStartsAgain() throws Exception {
        Created c = create();
        long vmm = c.instance().state().pid();
        SandboxInstance stopped = revisionOf(backend()).power().stop(c.instance(), operation());
        c = replace(c, stopped);
        assertEquals(SandboxStatus.STOPPED, stopped.status());
        assertFalse(stopped.alive());
        assertFalse(runs(vmm), "its VMM is gone");
        assertTrue(Files.exists(c.spec().dir().resolve(WORKSPACE)), "its disk is kept");

        Created adopted = adoptedByANewBackend(c, stopped.state());
        assertEquals(SandboxStatus.STOPPED, adopted.instance().status(), "a new revision finds it stopped, not gone");
        SandboxInstance started = revisionOf(backend()).power().start(adopted.instance(), operation());
        replace(adopted, started);
        assertEquals(SandboxStatus.RUNNING, started.status());
        assertTrue(started.channel().ping().pong(), "and answers");
        assertNotEquals(vmm, started.state().pid(), "under a VMM of its own");
    }

    /**
     * Checkpoints after the first build on the one before (a diff, where the VMM {@link #diffs}),
     * also after a restore, and each restores whole: its files and none written since.
     */
    @Test
    void laterCheckpointsBuildOnEarlierOnesAndEachRestoresWhole() throws Exception {
        Created c = create();
        Checkpoints cp = checkpoints(backend());
        exec(c.instance(), "/bin/sh", "-c", "echo one > a");
        cp.create(c.instance(), "t1", operation());
        exec(c.instance(), "/bin/sh", "-c", "echo two > b");
        CheckpointInfo second = cp.create(c.instance(), "t2", operation());
        assertEquals(diffs(), second.mode().startsWith("diff+"), "the second checkpoint's mode: " + second.mode());

        c = replace(c, cp.restore(c.instance(), "t1", operation()));
        assertEquals("one\n", exec(c.instance(), "/bin/cat", "a").stdout());
        assertEquals(1, exec(c.instance(), "/bin/sh", "-c", "test -e b").exitCode(), "b came after t1");
        exec(c.instance(), "/bin/sh", "-c", "echo three > c");
        CheckpointInfo third = cp.create(c.instance(), "t3", operation());
        assertEquals(diffs(), third.mode().startsWith("diff+"), "a checkpoint after a restore builds on what was restored");

        c = replace(c, cp.restore(c.instance(), "t2", operation()));
        assertEquals("one\ntwo\n", exec(c.instance(), "/bin/sh", "-c", "cat a b").stdout(), "t2 is whole");
        assertEquals(1, exec(c.instance(), "/bin/sh", "-c", "test -e c").exitCode());
        c = replace(c, cp.restore(c.instance(), "t3", operation()));
        assertEquals("one\nthree\n", exec(c.instance(), "/bin/sh", "-c", "cat a c").stdout(), "t3 is whole");
        assertEquals(1, exec(c.instance(), "/bin/sh", "-c", "test -e b").exitCode());
        assertEquals(List.of("t1", "t2", "t3"), cp.list(c.instance()).stream().map(CheckpointInfo::tag).toList());
    }

    /** Whether the VMM's checkpoints after the first are diffs on the one before (Firecracker's). */
    protected boolean diffs() {
        return false;
    }

    /** Whether process {@code pid} runs: not gone, and not a zombie its parent has yet to reap. */
    private static boolean runs(long pid) throws java.io.IOException {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        try {
            String line = Files.readString(stat);
            return !line.substring(line.lastIndexOf(')') + 2).startsWith("Z");
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        }
    }

    /**
     * Kills the VMM from outside, as a crash would, and its guest with it at once (a fake VMM's
     * emulated guest would otherwise die a moment later, through its parent-death signals).
     */
    @Override
    protected void killInstance(SandboxInstance instance) throws Exception {
        ProcessHandle vmm = ProcessHandle.of(instance.state().pid()).orElse(null);
        if (vmm == null) {
            return;
        }
        List<ProcessHandle> all = new java.util.ArrayList<>(vmm.descendants().toList());
        all.add(vmm);
        all.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle p : all) {
            p.onExit().get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    /** Kills the agent from inside, as a sandbox process could; the guest's init starts it again. */
    @Override
    protected void killAgent(SandboxInstance instance) {
        exec(instance, "/bin/sh", "-c", "(sleep 0.3; kill -9 $(pidof vivarium-agent)) >/dev/null 2>&1 </dev/null &");
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.LIMITS, "pids_limit is refused (501: a guest's processes are bounded by its memory)"
                + (emulated() ? ", and the emulated guest's /work is a directory, not the disk whose size disk_limit_mib sets"
                        : ""));
    }

    /** True when the guests are {@link EmulatedGuest}s of a fake VMM: every check then needs bubblewrap. */
    protected boolean emulated() {
        return false;
    }

    @BeforeEach
    final void needsBubblewrapToEmulate() {
        Assumptions.assumeTrue(!emulated() || Files.isExecutable(Path.of("/usr/bin/bwrap")),
                "no /usr/bin/bwrap: the emulated guest runs in a bubblewrap sandbox (apt-get install bubblewrap)");
    }
}
