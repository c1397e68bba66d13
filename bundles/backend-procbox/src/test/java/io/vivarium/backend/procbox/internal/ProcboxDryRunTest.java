package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;
import io.vivarium.testkit.Bounded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Dry-runs against real sandboxes, on an overlay and on a workspace copy: needs bubblewrap and root. */
class ProcboxDryRunTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "HOME", "/work");

    private static final String POPULATE = """
            set -e
            mkdir -p src/nested/deep gone-dir/sub replaced/old
            echo hello > src/edit.txt
            echo keep > src/nested/deep/keep.txt
            echo bye > delete-me.txt
            echo a > gone-dir/sub/a.txt
            echo old > replaced/old/file.txt
            echo r > replaced/r.txt
            echo secret > unreadable.txt
            chmod 000 unreadable.txt
            ln -s src/edit.txt link
            """;

    /** Durations only this run's dry-runs sleep for: other runs of these tests may share the host. */
    private static final String LONG_NAP = "600." + ThreadLocalRandom.current().nextInt(100_000, 1_000_000);
    private static final String SHORT_NAP = "29." + ThreadLocalRandom.current().nextInt(100_000, 1_000_000);

    private static final String CHANGE = """
            echo changed >> src/edit.txt
            rm delete-me.txt
            rm -rf gone-dir
            echo new > "with space.txt"
            rm -rf replaced && mkdir replaced && echo fresh > replaced/fresh.txt
            sleep %s &
            head -c 50000000 /dev/zero > big.bin
            echo done
            hostname
            """.formatted(LONG_NAP);

    @TempDir
    Path tmp;

    private final List<Created> created = new ArrayList<>();
    private Procbox procbox;

    private record Created(Procbox procbox, InstanceSpec spec, SandboxInstance instance) {
    }

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
        procbox = Procbox.root();
    }

    @AfterEach
    void destroyAll() {
        created.forEach(c -> c.procbox().backend().destroy(c.spec(), c.instance().state()));
        // deletes the runtimes' pools of ready workspace images
        created.stream().map(Created::procbox).distinct().forEach(Procbox::close);
        if (procbox != null) {
            procbox.close();
        }
    }

    static Stream<Arguments> mechanisms() {
        return Stream.of(
                Arguments.of(true, false),
                Arguments.of(false, false),
                Arguments.of(true, true),
                Arguments.of(false, true));
    }

    private static Procbox procbox(boolean overlay, boolean userNamespace) {
        return new Procbox(new ProcboxRuntime(Procbox.rootSettings(userNamespace), overlay));
    }

    /** The live workspace, as the host reaches it through the sandbox's root. */
    private static Path workspace(Created sandbox) {
        return SandboxMounts.workspace(((ProcboxInstance) sandbox.instance()).sandbox().init());
    }

    private Created create(Procbox on) throws IOException {
        return create(on, null);
    }

    private Created create(Procbox on, Integer memoryLimitMib) throws IOException {
        String id = "dr-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectory(tmp.resolve(id)), memoryLimitMib);
        Created sandbox = new Created(on, spec, on.create(spec));
        created.add(sandbox);
        return sandbox;
    }

    private static ExecResult exec(SandboxInstance instance, String script) {
        return instance.channel().exec(new ExecRequest(List.of("sh", "-c", script), 10, ENV, "/work", null, 1 << 20));
    }

    private static ExecRequest command(String script, int timeoutSecs) {
        return new ExecRequest(List.of("sh", "-c", script), timeoutSecs, ENV, "/work", null, 1 << 20);
    }

    @ParameterizedTest(name = "overlay={0} userns={1}")
    @MethodSource("mechanisms")
    void runsAgainstAThrowawayViewAndLeavesTheWorkspaceAsItWas(boolean overlay, boolean userNamespace)
            throws Exception {
        Procbox on = procbox(overlay, userNamespace);
        Created sandbox = create(on);
        assertEquals(0, exec(sandbox.instance(), POPULATE).exitCode());
        Path work = workspace(sandbox);
        SortedMap<String, String> before = snapshot(work);

        ScratchRun run = on.scratchRuns().run(sandbox.instance(), command(CHANGE, 30));
        try {
            assertEquals("done\n" + sandbox.spec().id() + "\n", run.result().stdout(), run.result().stderr());
            assertEquals(0, run.result().exitCode());
            assertFalse(run.result().timedOut());
            assertEquals(overlay ? "overlay" : "workspace-copy", run.mechanism());
            // the live workspace is walked through its nosymfollow view
            assertEquals(new HostFiles(((ProcboxInstance) sandbox.instance()).sandbox().init()
                    .throughRoot(Path.of(SandboxCommands.WALK_VIEW)), "/work", userNamespace ? 0 : 65534,
                    userNamespace ? 0 : 65534), run.before());
            if (overlay) {
                assertEquals(Optional.of(Set.of("/work/src/edit.txt", "/work/delete-me.txt", "/work/gone-dir",
                        "/work/with space.txt", "/work/replaced", "/work/big.bin")), run.touched());
            } else {
                assertEquals(Optional.empty(), run.touched());
            }
            Path after = run.after().hostDir();
            assertEquals("/work", run.after().sandboxDir());
            assertEquals("hello\nchanged\n", Files.readString(after.resolve("src/edit.txt")));
            assertEquals("new\n", Files.readString(after.resolve("with space.txt")));
            assertEquals(List.of("fresh.txt"), names(after.resolve("replaced")));
            assertFalse(Files.exists(after.resolve("delete-me.txt")));
            assertFalse(Files.exists(after.resolve("gone-dir")));
            assertEquals(50_000_000L, Files.size(after.resolve("big.bin")));
            assertEquals("keep\n", Files.readString(after.resolve("src/nested/deep/keep.txt")));
            assertEquals(before, snapshot(work), "the workspace changed while the dry-run was open");
            assertEquals(List.of(), sleepers(), "the command's background process outlived it");
        } finally {
            run.close();
        }
        run.close();

        assertEquals(before, snapshot(work));
        assertClean(sandbox);
        assertTrue(sandbox.instance().alive());
    }

    @Test
    void aTimeoutKillsTheCommandAndStillDiscardsItsEffects() throws Exception {
        Created sandbox = create(procbox);
        SortedMap<String, String> before = snapshot(workspace(sandbox));

        ScratchRun run = procbox.scratchRuns().run(sandbox.instance(), command("echo x > partial; sleep " + LONG_NAP + " & sleep " + SHORT_NAP, 1));
        run.close();

        // both sleeps are killed: assertClean finds neither
        assertTrue(run.result().timedOut());
        assertEquals(137, run.result().exitCode());
        assertEquals(before, snapshot(workspace(sandbox)));
        assertClean(sandbox);
    }

    @Test
    void theTwinHasItsOwnProcessesButTheSandboxsLoopbackAndHostname() throws Exception {
        ProcboxSandboxTest.assumeSystemPython();
        Created sandbox = create(procbox);
        SandboxInstance instance = sandbox.instance();
        exec(instance, "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &");
        String fetch = "python3 -c 'import urllib.request; "
                + "print(urllib.request.urlopen(\"http://127.0.0.1:8765/\").status)'";
        assertTrue(awaitZeroExit(instance, fetch), "the server in the sandbox did not come up");

        ScratchRun run = procbox.scratchRuns().run(instance, command(fetch + "; hostname; ps -eo args", 10));
        run.close();

        List<String> lines = run.result().stdout().lines().toList();
        assertEquals("200", lines.get(0), run.result().stderr());
        assertEquals(sandbox.spec().id(), lines.get(1));
        String processes = String.join("\n", lines.subList(2, lines.size()));
        assertTrue(processes.contains("ps -eo args"), "ps in the twin does not list itself: " + processes);
        assertFalse(processes.contains("http.server"), processes);
        assertFalse(processes.contains("vivarium-agent"), processes);
        assertEquals(0, exec(instance, fetch).exitCode(), "the sandbox's server did not survive the dry-run");
        assertClean(sandbox);
    }

    @Test
    void runsInTheRequestedDirectoryWithTheRequestedEnvironment() throws Exception {
        Created sandbox = create(procbox);
        exec(sandbox.instance(), "mkdir -p sub/dir");

        ScratchRun run = procbox.scratchRuns().run(sandbox.instance(), new ExecRequest(List.of("sh", "-c", "pwd; echo \"$FOO\""),
                10, Map.of("PATH", "/usr/bin:/bin", "FOO", "a b"), "/work/sub/dir", null, 1000));
        run.close();

        assertEquals("/work/sub/dir\na b\n", run.result().stdout());
    }

    @Test
    void theTwinIsChargedToTheSandboxsMemoryCgroup() throws Exception {
        ProcboxSandboxTest.assumeMemoryCgroup();
        ProcboxSandboxTest.assumeSystemPython();
        Created sandbox = create(procbox, 64);
        String allocate = "python3 -c 'b = bytearray(%d * 1024 * 1024); print(len(b))'";

        ScratchRun small = procbox.scratchRuns().run(sandbox.instance(), command(allocate.formatted(16), 10));
        small.close();
        ScratchRun big = procbox.scratchRuns().run(sandbox.instance(), command(allocate.formatted(200), 10));
        big.close();

        assertEquals(0, small.result().exitCode(), small.result().stderr());
        assertEquals(137, big.result().exitCode(), "the OOM killer should end it: " + big.result().stderr());
        assertTrue(sandbox.instance().alive());
    }

    @Test
    void refusesASandboxThatIsNotRunning() throws Exception {
        Created sandbox = create(procbox);
        ProcFs.liveStartTime(sandbox.instance().state().pid()).ifPresent(
                t -> new InitProcess(sandbox.instance().state().pid(), t).kill(java.time.Duration.ofSeconds(2)));

        ApiException e = assertThrows(ApiException.class, () -> procbox.scratchRuns().run(sandbox.instance(), command("true", 5)));

        assertEquals(503, e.status());
        assertEquals(List.of(), scratchDirs(sandbox));
    }

    @ParameterizedTest(name = "adopt={0}")
    @MethodSource("adoptOrDestroy")
    void adoptAndDestroyDiscardWhatAnInterruptedDryRunLeft(boolean adopt) throws Exception {
        Created sandbox = create(procbox);
        exec(sandbox.instance(), "echo kept > kept.txt");
        Path work = workspace(sandbox);
        SortedMap<String, String> before = snapshot(work);
        CompletableFuture<ScratchRun> interrupted = CompletableFuture.supplyAsync(
                () -> procbox.scratchRuns().run(sandbox.instance(), command("rm kept.txt; echo x > new; sleep " + LONG_NAP, 60)));
        Path scratch = awaitRunningTwin(sandbox);

        // a restarted daemon: another backend instance finds the leftovers
        try (Procbox restarted = Procbox.root()) {
            if (adopt) {
                restarted.backend().adopt(sandbox.spec(), sandbox.instance().state());
            } else {
                restarted.backend().destroy(sandbox.spec(), sandbox.instance().state());
            }
        }

        assertFalse(Files.exists(scratch));
        assertFalse(mountInfo().contains(scratch.toString()));
        assertEquals(List.of(), sleepers());
        if (adopt) {
            assertEquals(before, snapshot(work));
        } else {
            assertFalse(Files.exists(work), "destroy ended the sandbox, whose namespace alone had its workspace mounted");
        }
        assertEquals(adopt, sandbox.instance().alive());
        try {
            Bounded.get(interrupted, Duration.ofSeconds(60), "the interrupted dry-run ends").close();
        } catch (RuntimeException e) {
            // the interrupted dry-run found its scratch directory gone
        }
        assertClean(sandbox);
    }

    static Stream<Boolean> adoptOrDestroy() {
        return Stream.of(true, false);
    }

    private Path awaitRunningTwin(Created sandbox) throws IOException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (!sleepers().isEmpty()) {
                List<Path> dirs = scratchDirs(sandbox);
                assertEquals(1, dirs.size());
                return dirs.get(0);
            }
            Sleep.briefly(10);
        }
        throw new AssertionError("the dry-run's command did not start");
    }

    private static boolean awaitZeroExit(SandboxInstance instance, String script) {
        for (int i = 0; i < 100; i++) {
            if (exec(instance, script).exitCode() == 0) {
                return true;
            }
            Sleep.briefly(50);
        }
        return false;
    }

    /** No scratch directory, no mount in the sandbox's directory, no process of a dry-run's command. */
    private static void assertClean(Created sandbox) throws IOException {
        assertEquals(List.of(), scratchDirs(sandbox));
        assertFalse(mountInfo().contains(sandbox.spec().dir() + "/dryrun-"), mountInfo());
        assertEquals(List.of(), sleepers());
    }

    private static List<Path> scratchDirs(Created sandbox) throws IOException {
        try (Stream<Path> entries = Files.list(sandbox.spec().dir())) {
            return entries.filter(p -> p.getFileName().toString().startsWith("dryrun-")).toList();
        }
    }

    private static String mountInfo() throws IOException {
        return Files.readString(Path.of("/proc/self/mountinfo"));
    }

    /** Host pids of every sleep for {@link #LONG_NAP} or {@link #SHORT_NAP}: only this run's dry-runs start them. */
    private static List<Long> sleepers() throws IOException {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(p -> p.getFileName().toString().matches("\\d+"))
                    .map(p -> Long.parseLong(p.getFileName().toString()))
                    .filter(pid -> ProcFs.liveStartTime(pid).isPresent())
                    .filter(pid -> {
                        List<String> argv = ProcFs.commandLine(pid);
                        return argv.equals(List.of("sleep", LONG_NAP)) || argv.equals(List.of("sleep", SHORT_NAP));
                    })
                    .toList();
        }
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** Every entry under {@code root}: type, mode, owner, mtime and the content's or link's hash. */
    static SortedMap<String, String> snapshot(Path root) throws IOException {
        SortedMap<String, String> entries = new TreeMap<>();
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                entries.put(root.relativize(dir).toString(), describe(dir, "d", ""));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                String key = root.relativize(file).toString();
                if (attrs.isSymbolicLink()) {
                    entries.put(key, describe(file, "l", Files.readSymbolicLink(file).toString()));
                } else if (attrs.isRegularFile()) {
                    entries.put(key, describe(file, "f", sha256(file)));
                } else {
                    entries.put(key, describe(file, "o", ""));
                }
                return FileVisitResult.CONTINUE;
            }
        });
        return entries;
    }

    private static String describe(Path path, String type, String content) throws IOException {
        Map<String, Object> unix = Files.readAttributes(path, "unix:mode,uid,gid,lastModifiedTime",
                LinkOption.NOFOLLOW_LINKS);
        return type + " " + Integer.toOctalString((Integer) unix.get("mode")) + " " + unix.get("uid") + ":"
                + unix.get("gid") + " " + unix.get("lastModifiedTime") + " " + content;
    }

    private static String sha256(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] buffer = new byte[1 << 16];
            int n;
            while ((n = in.read(buffer)) != -1) {
                digest.update(buffer, 0, n);
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
