package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The suites' clean-up check finds what an instance left, and only what it left. */
class InstanceLeftoversTest {
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @TempDir
    Path tmp;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void killStarted() {
        for (Process p : started) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    /** A shell running {@code script} (never replaced by its last command, so its arguments stay in its command line). */
    private Process shell(String script, String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("/bin/sh", "-c", script + "; true"));
        argv.addAll(List.of(args));
        Process p = new ProcessBuilder(argv).start();
        started.add(p);
        return p;
    }

    @Test
    void aProcessTheStateNamesAndItsDescendantsAreLeftUntilTheyEnd() throws Exception {
        InstanceSpec spec = spec("kit-1");
        Process init = shell("sleep 600 & echo $!; wait");
        long child = Long.parseLong(new BufferedReader(new InputStreamReader(init.getInputStream())).readLine());
        InstanceLeftovers leftovers = InstanceLeftovers.before(spec, new InstanceState(init.pid(), Map.of()), true);

        List<String> left = leftovers.afterDestroy();
        assertEquals(2, left.size(), left.toString());
        assertTrue(left.get(0).startsWith("process " + init.pid() + " of the instance"), left.toString());
        assertTrue(left.get(1).startsWith("process " + child + " of the instance: sleep 600"), left.toString());

        ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
        Bounded.waitFor(init, PATIENCE, "the shell ends once its child is killed");
        assertEquals(List.of(), leftovers.afterDestroy(), "ended processes are not left, nor is a reused pid taken for them");
    }

    @Test
    void aProcessNamingTheDirectoryIsLeftAndOneNamingASiblingIsNot() throws Exception {
        InstanceSpec spec = spec("kit-1");
        Path sibling = Files.createDirectories(tmp.resolve("sandboxes/kit-10"));
        shell("sleep 600", "--root=" + sibling + "/runsc");
        InstanceState none = new InstanceState(0, Map.of());
        assertEquals(List.of(), InstanceLeftovers.before(spec, none, true).afterDestroy(), "kit-10's is not kit-1's");

        Process helper = shell("sleep 600", "--root=" + spec.dir() + "/runsc");
        Files.createDirectories(spec.dir());
        List<String> left = InstanceLeftovers.before(spec, none, true).afterDestroy();
        assertEquals(1, left.size(), left.toString());
        assertTrue(left.getFirst().startsWith("process " + helper.pid() + " naming the instance's directory"),
                left.toString());
    }

    @Test
    void theDirectoryIsRemovedAndAPathTheStateNamesOutsideItIsLeftIfItCarriesTheId() throws Exception {
        InstanceSpec spec = spec("kit-1");
        Files.writeString(Files.createDirectories(spec.dir().resolve("work")).resolve("file"), "x");
        Path link = Files.createSymbolicLink(Files.createDirectories(tmp.resolve("links")).resolve("kit-1"), spec.dir());
        Path shared = Files.createDirectories(tmp.resolve("images/default"));
        InstanceState state = new InstanceState(0, Map.of("link", link.toString(), "image", shared.toString(),
                "socket", link.resolve("agent.sock").toString()));

        List<String> left = InstanceLeftovers.before(spec, state, false).afterDestroy();

        assertEquals(List.of("file outside the instance's directory, named in its state: " + link), left);
        assertFalse(Files.exists(spec.dir()), "the directory is removed as core removes it");
        assertTrue(Files.isDirectory(shared), "what the state names without the instance's id is not the instance's");
    }

    @Test
    void aCgroupNamedAfterTheInstanceOrInItsStateIsLeftAndOneOfASiblingIsNot() throws Exception {
        Path hierarchy = Path.of("/sys/fs/cgroup/pids");
        Assumptions.assumeTrue(Files.isWritable(hierarchy), "no writable cgroup v1 pids hierarchy here");
        String id = "kit-" + ProcessHandle.current().pid() + "-1";
        Path sibling = Files.createDirectory(hierarchy.resolve("vivarium-" + id + "0-5eed"));
        Path own = Files.createDirectory(hierarchy.resolve("vivarium-" + id + "-5eed"));
        Path pooled = Files.createDirectory(hierarchy.resolve("vivarium-pooled-" + ProcessHandle.current().pid()));
        try {
            List<String> left = InstanceLeftovers.before(spec(id), new InstanceState(0, Map.of("pids_cgroup",
                    pooled.toString())), false).afterDestroy();
            assertEquals(List.of("file outside the instance's directory, named in its state: " + pooled,
                    "cgroup named after the instance: " + own), left, "a cgroup its state names is the instance's");
        } finally {
            Files.delete(own);
            Files.delete(sibling);
            Files.delete(pooled);
        }
    }

    @Test
    void aMountInTheDirectoryIsLeftAndTheDirectoryIsNotWalked() throws Exception {
        Assumptions.assumeTrue(ProcessHandle.current().info().user().orElse("").equals("root"), "mounting needs root");
        InstanceSpec spec = spec("kit-1");
        Path mountPoint = Files.createDirectories(spec.dir().resolve("work"));
        Bounded.Ran mount = Bounded.run(PATIENCE, "mount", "-t", "tmpfs", "tmpfs", mountPoint.toString());
        Assumptions.assumeTrue(mount.exitCode() == 0, () -> "cannot mount a tmpfs here: " + mount.output());
        try {
            Path kept = Files.writeString(mountPoint.resolve("kept"), "x");
            List<String> left = InstanceLeftovers.before(spec, new InstanceState(0, Map.of()), true).afterDestroy();
            assertEquals(2, left.size(), left.toString());
            assertTrue(left.get(0).startsWith("mount at " + mountPoint), left.toString());
            assertEquals("files: " + spec.dir().toAbsolutePath() + " is not removed: a mount is left in it", left.get(1));
            assertTrue(Files.exists(kept), "nothing below a mount left in the directory is deleted");
        } finally {
            assertEquals(0, Bounded.run(PATIENCE, "umount", mountPoint.toString()).exitCode());
        }
    }

    private InstanceSpec spec(String id) throws IOException {
        return new InstanceSpec(id, Files.createDirectories(tmp.resolve("sandboxes").resolve(id)), null);
    }
}
