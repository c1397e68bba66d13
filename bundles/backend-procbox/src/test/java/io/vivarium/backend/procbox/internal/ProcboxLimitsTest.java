package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.mounts.MountTable;
import io.vivarium.testkit.Bounded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pids and workspace-size limits, on real sandboxes: needs bubblewrap and root. */
class ProcboxLimitsTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "HOME", "/work");

    @TempDir
    Path tmp;

    private Procbox procbox;
    private final List<InstanceSpec> specs = new ArrayList<>();
    private final List<SandboxInstance> instances = new ArrayList<>();

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
        procbox = new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, 512, 1024, tmp.resolve("templates")));
    }

    @AfterEach
    void destroyAll() {
        for (int i = 0; i < instances.size(); i++) {
            procbox.backend().destroy(specs.get(i), instances.get(i).state());
        }
        // deletes the runtime's pool of ready workspace images
        if (procbox != null) {
            procbox.close();
        }
    }

    private SandboxInstance create(String id, Integer pidsLimit, Integer diskLimitMib) throws IOException {
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectory(tmp.resolve(id)), null, null, null, pidsLimit, diskLimitMib);
        SandboxInstance instance = procbox.create(spec);
        specs.add(spec);
        instances.add(instance);
        return instance;
    }

    private static ExecResult exec(SandboxInstance instance, int timeoutSecs, String... args) {
        return instance.channel().exec(new ExecRequest(List.of(args), timeoutSecs, ENV, "/work", null, 1 << 16));
    }

    private static Path pidsCgroup(SandboxInstance instance) {
        String path = instance.state().data().get("pids_cgroup");
        assertFalse(path == null || path.isEmpty(), "the sandbox has a pids cgroup: " + instance.state());
        return Path.of(path);
    }

    @Test
    void appliesTheDefaultPidsLimitAndTheOneAskedFor() throws IOException {
        Assumptions.assumeTrue(LimitCgroups.detect(ProcboxSettings.DEFAULT_CGROUP_ROOT, LimitCgroups.Controller.PIDS)
                .supported(), "no writable pids cgroup");
        SandboxInstance byDefault = create("t-pids-default", null, null);
        SandboxInstance asked = create("t-pids-64", 64, null);

        assertEquals("512", Files.readString(pidsCgroup(byDefault).resolve("pids.max")).strip());
        assertEquals("64", Files.readString(pidsCgroup(asked).resolve("pids.max")).strip());
        exec(asked, 10, "/bin/sh", "-c", "sleep 61 >/dev/null 2>&1 &");
        // the exec returns once the shell exited, possibly before its forked child exec'd sleep
        long deadline = System.nanoTime() + 5_000_000_000L;
        List<String> members = Files.readAllLines(pidsCgroup(asked).resolve("cgroup.procs"));
        while (members.stream().noneMatch(pid -> cmdline(pid).equals("sleep\u000061\u0000")) && System.nanoTime() < deadline) {
            Sleep.briefly(10);
            members = Files.readAllLines(pidsCgroup(asked).resolve("cgroup.procs"));
        }
        assertTrue(members.stream().anyMatch(pid -> cmdline(pid).equals("sleep\u000061\u0000")),
                "a process an exec started is charged to the sandbox's pids cgroup: " + members);
    }

    private static String cmdline(String pid) {
        try {
            return Files.readString(Path.of("/proc", pid, "cmdline"));
        } catch (IOException e) {
            return "";
        }
    }

    @Test
    void forksPastThePidsLimitFailInsideTheSandbox() throws IOException {
        Assumptions.assumeTrue(LimitCgroups.detect(ProcboxSettings.DEFAULT_CGROUP_ROOT, LimitCgroups.Controller.PIDS)
                .supported(), "no writable pids cgroup");
        SandboxInstance sandbox = create("t-pids-bomb", 32, null);

        // 100 sleepers cannot fit in 32 tasks; the shell reports each fork it was refused
        ExecResult r = exec(sandbox, 30, "/bin/sh", "-c",
                "i=0; while [ $i -lt 100 ]; do sleep 30 >/dev/null & i=$((i+1)); done 2>/dev/null");
        long current = Long.parseLong(Files.readString(pidsCgroup(sandbox).resolve("pids.current")).strip());
        assertTrue(current <= 32, "the sandbox holds at most its limit of tasks, has " + current);
        assertTrue(current >= 20, "the loop filled the sandbox up to about its limit: " + current + " " + r);
        assertEquals("ok\n", exec(create("t-pids-other", null, null), 10, "echo", "ok").stdout(),
                "another sandbox still forks");
    }

    @Test
    void theWorkspaceIsAnImageOfTheAskedSizeAndFillingItGivesEnospc() throws IOException {
        SandboxInstance sandbox = create("t-disk-32", null, 32);

        assertTrue(workspaceSource(sandbox).startsWith("/dev/loop"), "the workspace is a loop-mounted image");
        long total = workspaceBytes(sandbox);
        assertTrue(total > 24L << 20 && total <= 32L << 20, "a 32 MiB filesystem: " + total);
        assertEquals("", exec(sandbox, 10, "ls", "-A", "/work").stdout(), "an empty workspace, no lost+found");
        assertEquals("65534\n", exec(sandbox, 10, "stat", "-c", "%u", "/work").stdout(), "owned by the sandbox user");

        ExecResult fill = exec(sandbox, 60, "dd", "if=/dev/zero", "of=/work/fill", "bs=1M", "count=64");
        assertNotEquals(0, fill.exitCode(), fill.stderr());
        assertTrue(fill.stderr().contains("No space left on device"), fill.stderr());
        assertEquals(0, exec(sandbox, 10, "rm", "/work/fill").exitCode(), "and freeing space works again");
    }

    /** The launch copies the template across filesystems too, where copy_file_range refuses (EXDEV). */
    @Test
    void aTemplateOnAnotherFilesystemIsCopied() throws IOException {
        Path shm = Path.of("/dev/shm");
        Assumptions.assumeTrue(Files.isDirectory(shm) && !Files.getAttribute(shm, "unix:dev")
                .equals(Files.getAttribute(tmp, "unix:dev")), "no /dev/shm on another filesystem than " + tmp);
        Path templates = Files.createTempDirectory(shm, "procbox-templates-");
        Procbox own = new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, 512, 1024, templates));
        InstanceSpec spec = new InstanceSpec("t-shm", Files.createDirectory(tmp.resolve("t-shm")), null, null, null,
                null, 16);
        try {
            SandboxInstance sandbox = own.create(spec);
            try {
                assertEquals(0, exec(sandbox, 10, "sh", "-c", "echo x > /work/f && cat /work/f").exitCode());
                long total = workspaceBytes(sandbox);
                assertTrue(total > 8L << 20 && total <= 16L << 20, "a 16 MiB filesystem: " + total);
            } finally {
                own.backend().destroy(spec, sandbox.state());
            }
        } finally {
            own.close();
            try (var files = Files.list(templates)) {
                for (Path file : files.toList()) {
                    Files.delete(file);
                }
            }
            Files.delete(templates);
        }
    }

    @Test
    void theDefaultWorkspaceIsOneGibibyte() throws IOException {
        long total = workspaceBytes(create("t-disk-default", null, null));
        assertTrue(total > 900L << 20 && total <= 1L << 30, "a 1 GiB filesystem: " + total);
    }

    @Test
    void destroyUnmountsTheWorkspaceAndSoDoesTheCleanupOfAnInterruptedCreate() throws IOException {
        SandboxInstance recorded = create("t-disk-destroy", null, 32);
        SandboxInstance unrecorded = create("t-disk-crash", null, 32);
        Path recordedImage = tmp.resolve("t-disk-destroy").resolve(WorkspaceImages.IMAGE).toRealPath();
        Path crashedImage = tmp.resolve("t-disk-crash").resolve(WorkspaceImages.IMAGE).toRealPath();
        assertTrue(loopBacked(recordedImage) && loopBacked(crashedImage), "each image is on a loop device");

        procbox.backend().destroy(specs.get(0), recorded.state());
        // as after a crash between launch and record: core only has the directory
        procbox.backend().destroy(specs.get(1), new InstanceState(0, Map.of()));

        // the last mount of an image goes with the sandbox's namespace, and its device with it (autoclear)
        Bounded.until(Duration.ofSeconds(10), "destroy frees the workspace image's loop device",
                () -> !loopBacked(recordedImage));
        Bounded.until(Duration.ofSeconds(10), "so does the cleanup of a create the daemon did not record",
                () -> !loopBacked(crashedImage));
        assertFalse(unrecorded.alive(), "and it kills the unrecorded sandbox");
    }

    @Test
    void limitsAskedForThatTheHostCannotEnforceAreRefused() throws IOException {
        procbox.close();
        procbox = new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534, tmp.resolve("none"),
                false, 512, 0, tmp.resolve("templates")));
        InstanceSpec spec = new InstanceSpec("t-nopids", Files.createDirectory(tmp.resolve("t-nopids")), null, null, null, 64, null);

        ApiException e = assertThrows(ApiException.class, () -> procbox.create(spec));

        assertEquals(501, e.status());
        assertTrue(e.getMessage().startsWith("pids_limit is not supported on this host: "), e.getMessage());
        SandboxInstance unlimited = create("t-nolimits", null, null);
        assertEquals("", unlimited.state().data().get("pids_cgroup"), "without a pids cgroup the default is dropped");
        assertFalse(workspaceSource(unlimited).startsWith("/dev/loop"), "a default disk limit of 0 binds a plain directory");
    }

    /** What the sandbox's own mount table says its workspace is mounted from. */
    private static String workspaceSource(SandboxInstance sandbox) {
        return MountTable.at(((ProcboxInstance) sandbox).sandbox().init().pid(), Path.of("/work")).orElseThrow().source();
    }

    /** The size of the workspace's file system, as the sandbox sees it. */
    private static long workspaceBytes(SandboxInstance sandbox) {
        String[] blocks = exec(sandbox, 10, "stat", "-f", "-c", "%b %S", "/work").stdout().strip().split(" ");
        return Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]);
    }

    /** Whether a loop device is attached to {@code image}. */
    private static boolean loopBacked(Path image) {
        try (Stream<Path> devices = Files.list(Path.of("/sys/block"))) {
            for (Path device : devices.filter(d -> d.getFileName().toString().startsWith("loop")).toList()) {
                Path backing = device.resolve("loop/backing_file");
                if (Files.exists(backing) && Files.readString(backing).strip().equals(image.toString())) {
                    return true;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return false;
    }
}
