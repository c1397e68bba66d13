package io.vivarium.backend.procbox.internal;

import io.vivarium.common.mounts.MountTable;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.storage.reflink.internal.ReflinkStrategyComponent;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.FixedStorage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real sandboxes: needs bubblewrap and root. */
class ProcboxSandboxTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "HOME", "/work");

    @TempDir
    Path tmp;

    private Procbox procbox;
    private final List<Created> created = new ArrayList<>();

    private record Created(InstanceSpec spec, SandboxInstance instance) {
    }

    static boolean runnable() {
        return Files.isExecutable(Path.of("/usr/bin/bwrap")) && ProcFs.effectiveUid() == 0;
    }

    /** Skips the calling test, with the probe's reason, on a host without a writable memory cgroup. */
    static void assumeMemoryCgroup() {
        LimitCgroups cgroups = LimitCgroups.detect(ProcboxSettings.DEFAULT_CGROUP_ROOT, LimitCgroups.Controller.MEMORY);
        Assumptions.assumeTrue(cgroups.supported(), () -> "no writable memory cgroup: " + cgroups.unsupportedReason());
    }

    /** Skips the calling test unless Debian's python3 is there: the sandbox sees the host's /usr, not ~/.pyenv. */
    static void assumeSystemPython() {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")),
                "needs /usr/bin/python3 (apt-get install python3; .ci/run installs it)");
    }

    /**
     * Does what a sandbox process may: {@code kill -9 -1} as the sandbox user, which takes the
     * agent's worker (and the exec itself) along; the call then fails with the agent gone.
     */
    static void killEverySandboxUserProcess(SandboxInstance instance) {
        try {
            ExecResult r = exec(instance, "/bin/kill", "-9", "-1");
            throw new AssertionError("the exec outlived the agent that ran it: " + r);
        } catch (ApiException e) {
            assertEquals(503, e.status(), e.getMessage());
        }
    }

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(runnable(), "needs bubblewrap and root");
        procbox = Procbox.root();
    }

    @AfterEach
    void destroyAll() {
        created.forEach(c -> procbox.backend().destroy(c.spec(), c.instance().state()));
        // deletes the runtime's pool of ready workspace images
        if (procbox != null) {
            procbox.close();
        }
    }

    /** Closes the revision of the test's start (nothing was created with it yet) for one with settings of the test's own. */
    private void replaceProcbox(Procbox next) {
        procbox.close();
        procbox = next;
    }

    private Created create(Integer memoryLimitMib) throws IOException {
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectory(tmp.resolve(id)), memoryLimitMib);
        Created sandbox = new Created(spec, procbox.create(spec));
        created.add(sandbox);
        return sandbox;
    }

    private SandboxInstance create() throws IOException {
        return create(null).instance();
    }

    private static ExecResult exec(SandboxInstance instance, String... args) {
        return instance.channel().exec(new ExecRequest(List.of(args), 10, ENV, "/work", null, 1 << 20));
    }

    /** Every process's argv as the sandbox sees it; ps must at least see itself, or a "not listed" proves nothing. */
    private static String processes(SandboxInstance instance) {
        String processes = exec(instance, "ps", "-eo", "args").stdout();
        assertTrue(processes.contains("ps -eo args"), "ps does not list itself: " + processes);
        return processes;
    }

    /** Host pids of every process in the sandbox's PID namespace. */
    private static List<Long> hostPidsInNamespaceOf(long initPid) throws IOException {
        Path namespace = Files.readSymbolicLink(Path.of("/proc", Long.toString(initPid), "ns/pid"));
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(p -> p.getFileName().toString().matches("\\d+"))
                    .filter(p -> {
                        try {
                            return Files.readSymbolicLink(p.resolve("ns/pid")).equals(namespace);
                        } catch (IOException e) {
                            return false;
                        }
                    })
                    .map(p -> Long.parseLong(p.getFileName().toString()))
                    .toList();
        }
    }

    @Test
    void runsCommandsInsideTheSandbox() throws IOException {
        SandboxInstance instance = create();

        ExecResult result = exec(instance, "echo", "hi");

        assertEquals("hi\n", result.stdout());
        assertEquals(0, result.exitCode());
        assertTrue(instance.alive());
        assertEquals("/work", instance.workspace());
        ExecResult missing = exec(instance, "no-such-program");
        assertEquals(127, missing.exitCode(), missing.toString());
        assertTrue(missing.stderr().contains("no-such-program"), missing.stderr());
    }

    @Test
    void aSandboxAndAForkedChildMountNothingInTheHostsMountTable() throws IOException {
        List<MountTable.Mount> before = MountTable.all();
        Created parent = create(null);
        exec(parent.instance(), "sh", "-c", "echo mine > /work/f");
        StorageStrategies storage = FixedStorage.of(new ReflinkStrategyComponent());
        Path image = Files.createDirectory(tmp.resolve("image"));
        procbox.images().capture(parent.instance(), image, storage, OperationContext.until(Instant.now().plusSeconds(60)));
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, tmp.resolve(id), null);
        SandboxInstance child = procbox.images().fork(spec, image, storage,
                OperationContext.until(Instant.now().plusSeconds(60)));
        created.add(new Created(spec, child));

        assertEquals(before, MountTable.all(), "the workspaces and their views are mounted in the sandboxes' namespaces");
        for (SandboxInstance sandbox : List.of(parent.instance(), child)) {
            Path view = sandbox.hostFiles().orElseThrow().hostDir();
            assertEquals(((ProcboxInstance) sandbox).sandbox().init().throughRoot(Path.of(SandboxCommands.WALK_VIEW)), view);
            assertEquals("mine\n", Files.readString(view.resolve("f")));
        }
    }

    @Test
    void theDaemonWalksTheWorkspaceThroughAViewThatFollowsNoSymlink() throws IOException {
        Created sandbox = create(null);
        Path view = sandbox.instance().hostFiles().orElseThrow().hostDir();
        long init = ((ProcboxInstance) sandbox.instance()).sandbox().init().pid();
        assertTrue(MountTable.at(init, Path.of(SandboxCommands.WALK_VIEW)).orElseThrow().options()
                .contains(WalkView.NOSYMFOLLOW), "the sandbox's table shows the view without symlinks");
        exec(sandbox.instance(), "sh", "-c", "mkdir /work/d && echo mine > /work/d/f");
        assertEquals("mine\n", Files.readString(view.resolve("d/f")));

        // what a sandbox process could do between the daemon's check of d and its read below d
        exec(sandbox.instance(), "sh", "-c", "rm -r /work/d && ln -s /etc /work/d");
        assertThrows(java.nio.file.FileSystemException.class, () -> Files.readAttributes(view.resolve("d/passwd"),
                java.nio.file.attribute.BasicFileAttributes.class), "the kernel refuses to follow d out of the workspace");
        assertNotEquals(0, exec(sandbox.instance(), "ls", SandboxCommands.DAEMON_DIR).exitCode(),
                "the sandbox user cannot enter the daemon's directory");
    }

    @Test
    void isFullySetUpWhenCreateReturns() throws IOException {
        for (int i = 0; i < 10; i++) {
            Created sandbox = create(null);

            ExecResult result = exec(sandbox.instance(), "hostname");

            assertEquals(sandbox.spec().id() + "\n", result.stdout(), result.stderr());
        }
    }

    @Test
    void passesEnvironmentCwdAndStdin() throws IOException {
        SandboxInstance instance = create();

        ExecResult result = instance.channel().exec(new ExecRequest(List.of("sh", "-c", "echo \"$FOO\"; pwd; cat"),
                10, Map.of("PATH", "/usr/bin:/bin", "FOO", "a b"), "/tmp", "from stdin\n", 1000));
        ExecResult env = instance.channel().exec(new ExecRequest(List.of("/usr/bin/env"), 10, Map.of("ONLY", "me"),
                "/work", null, 1000));

        assertEquals("a b\n/tmp\nfrom stdin\n", result.stdout());
        assertEquals("ONLY=me\n", env.stdout());
    }

    @Test
    void passesArgumentsVerbatim() throws IOException {
        SandboxInstance instance = create();
        List<String> args = List.of("a b", "it's \"q\"", "$(id)", "`id`", "x\ny", "-n", "*");
        List<String> argv = new ArrayList<>(List.of("printf", "[%s]"));
        argv.addAll(args);

        for (String cwd : List.of("/work", "/tmp")) {
            ExecResult result = instance.channel().exec(new ExecRequest(argv, 10, ENV, cwd, null, 1000));
            assertEquals("[a b][it's \"q\"][$(id)][`id`][x\ny][-n][*]", result.stdout(), cwd);
        }
    }

    @Test
    void runsAsTheSandboxUserWithoutNetwork() throws IOException {
        SandboxInstance instance = create();

        assertEquals("65534\n", exec(instance, "id", "-u").stdout());
        List<String> interfaces = exec(instance, "cat", "/proc/net/dev").stdout().lines().skip(2)
                .map(line -> line.trim().split(":")[0]).toList();
        assertEquals(List.of("lo"), interfaces);
    }

    @Test
    void theAgentIsTheKeepAliveAndRunsAsTheSandboxUserOnASocketOnlyRootReaches() throws IOException {
        Created sandbox = create(null);

        assertEquals("vivarium-agent\nvivarium-agent\n",
                exec(sandbox.instance(), "sh", "-c", "cat /proc/1/task/*/children | xargs -n1 | head -1 | "
                        + "xargs -I P cat /proc/P/comm; cat /proc/$PPID/comm").stdout());
        assertEquals("65534 65534\n", exec(sandbox.instance(), "sh", "-c", "echo $(id -u) $(id -g)").stdout());
        Path socket = sandbox.spec().dir().resolve("agent/agent.sock");
        assertEquals("/run/vivarium/agent.sock", sandbox.instance().state().data().get("agent"));
        assertEquals("0 600", Files.getAttribute(socket, "unix:uid") + " "
                + Integer.toOctalString((Integer) Files.getAttribute(socket, "unix:mode") & 0777));
        assertEquals(0, Files.getAttribute(socket.getParent(), "unix:uid"));
        ExecResult write = exec(sandbox.instance(), "sh", "-c", "echo x > /run/vivarium/f");
        assertTrue(write.exitCode() != 0 && write.stderr().contains("Permission denied"),
                "the sandbox user may not write to the agent's directory: " + write);
    }

    @Test
    void inAUserNamespaceTheSandboxCannotSwapTheAgentsSocketForALink() throws IOException {
        replaceProcbox(new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, true)));
        SandboxInstance instance = create();

        ExecResult swap = exec(instance, "sh", "-c", "id -u; rm -f /run/vivarium/agent.sock; "
                + "ln -s /proc/1/root/run/vivarium/agent.sock /run/vivarium/x; mv /run /run2; mkdir /x; echo done");

        assertTrue(swap.stdout().startsWith("0\n"), "root of its user namespace: " + swap);
        assertEquals(4, swap.stderr().lines().filter(l -> l.contains("Read-only file system")).count(), swap.stderr());
        assertEquals("still\n", exec(instance, "echo", "still").stdout());
    }

    /**
     * In a user namespace the sandbox runs as the daemon's uid: its PID 1 must be the non-dumpable
     * agent, not a bwrap holding the host's procbox.log as its stdout and stderr.
     */
    @Test
    void inAUserNamespaceTheSandboxCannotReachItsInitsFdsOrEnvironment() throws IOException {
        replaceProcbox(new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, true)));
        Created sandbox = create(null);
        Path log = LaunchFiles.in(sandbox.spec().dir()).logFile();
        // a log that a truncation would visibly change
        Files.writeString(log, "marker\n", StandardOpenOption.APPEND);
        byte[] before = Files.readAllBytes(log);

        for (String script : List.of(": > /proc/1/fd/2", "echo x > /proc/1/fd/1", "cat /proc/1/environ")) {
            ExecResult r = exec(sandbox.instance(), "sh", "-c", script);
            assertTrue(r.exitCode() != 0 && r.stderr().contains("Permission denied"), script + ": " + r);
        }

        assertArrayEquals(before, Files.readAllBytes(log), "the host's log is as it was");
        assertEquals("still\n", exec(sandbox.instance(), "echo", "still").stdout());
    }

    @Test
    void killingEveryProcessOfTheSandboxUserLeavesTheSandboxUsable() throws Exception {
        SandboxInstance instance = create();
        exec(instance, "sh", "-c", "sleep 300 >/dev/null 2>&1 &");

        killEverySandboxUserProcess(instance);

        assertTrue(instance.alive());
        assertEquals("back\n", awaitExec(instance, "echo", "back").stdout(), "the supervisor restarted the worker");
        assertFalse(processes(instance).contains("sleep 300"), "kill -9 -1 reached the background process too");
    }

    @Test
    void aHungAgentIsA502AfterTheRequestsTimeoutNotAHungRequest() throws Exception {
        SandboxInstance instance = create();
        long worker = ProcessHandle.of(instance.state().pid()).orElseThrow().descendants()
                .filter(p -> ProcFs.command(p.pid()).filter("vivarium-agent"::equals).isPresent())
                .filter(p -> p.parent().flatMap(parent -> ProcFs.command(parent.pid())).filter("vivarium-agent"::equals)
                        .isPresent())
                .findFirst().orElseThrow().pid();
        signal("STOP", worker);
        try {
            ApiException hung = assertThrows(ApiException.class, () -> instance.channel().exec(
                    new ExecRequest(List.of("true"), 1, ENV, "/work", null, 1000)));
            assertEquals(502, hung.status(), hung.getMessage());
            assertTrue(hung.getMessage().contains("did not answer"), hung.getMessage());
        } finally {
            signal("CONT", worker);
        }
        assertEquals("again\n", exec(instance, "echo", "again").stdout());
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        assertEquals(0, Bounded.waitFor(new ProcessBuilder("/bin/kill", "-" + signal, Long.toString(pid)).inheritIO().start(),
                Duration.ofSeconds(30), "kill -" + signal + " " + pid));
    }

    /** Retries while the agent is restarting (503), up to a deadline. */
    private static ExecResult awaitExec(SandboxInstance instance, String... args) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                return exec(instance, args);
            } catch (ApiException e) {
                if (e.status() != 503 || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(20);
            }
        }
    }

    @Test
    void aSandboxRecordedWithoutAnAgentIsAdoptedAndEnteredWithNsenter() throws Exception {
        Created sandbox = create(null);
        exec(sandbox.instance(), "sh", "-c", "echo kept > /tmp/marker");
        Map<String, String> legacy = new java.util.HashMap<>(sandbox.instance().state().data());
        legacy.remove("agent");

        SandboxInstance adopted = Procbox.root().backend().adopt(sandbox.spec(),
                new io.vivarium.api.spi.InstanceState(sandbox.instance().state().pid(), legacy));

        assertTrue(adopted.channel() instanceof NsenterChannel, adopted.channel().getClass().getName());
        assertEquals("kept\n", exec(adopted, "cat", "/tmp/marker").stdout());
        assertEquals("kept\n", new String(adopted.channel().readFile("/tmp/marker", 100)));
        assertFalse(adopted.state().data().containsKey("agent"));
    }

    @Test
    void sharesTheWorkspaceWithTheHostThroughItsRoot() throws IOException {
        Created sandbox = create(null);

        exec(sandbox.instance(), "sh", "-c", "echo data > /work/f.txt");

        Path file = SandboxMounts.workspace(((ProcboxInstance) sandbox.instance()).sandbox().init()).resolve("f.txt");
        assertEquals("data\n", Files.readString(file));
        assertEquals(65534, Files.getAttribute(file, "unix:uid"));
    }

    @Test
    void backgroundProcessesOutliveTheExecThatStartedThem() throws IOException {
        SandboxInstance instance = create();

        ExecResult started = exec(instance, "sh", "-c", "sleep 300 & echo started");

        // an exec that waited for the child would time out, and its timeout kills the child
        assertEquals("started\n", started.stdout());
        assertFalse(started.timedOut());
        // the shell may exit before its forked child has exec'd sleep
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!processes(instance).contains("sleep 300") && System.nanoTime() < deadline) {
            Sleep.briefly(10);
        }
        assertTrue(processes(instance).contains("sleep 300"));
    }

    @Test
    void timeoutKillsTheCommandAndItsBackgroundProcesses() throws Exception {
        SandboxInstance instance = create();

        ExecResult result = instance.channel().exec(
                new ExecRequest(List.of("sh", "-c", "sleep 31 & sleep 30"), 1, ENV, "/work", null, 1000));

        assertTrue(result.timedOut());
        assertEquals(137, result.exitCode());
        // the whole group got SIGKILL at once; the agent reports when the command itself is reaped,
        // its background process may take a moment more to be gone
        long deadline = System.nanoTime() + 10_000_000_000L;
        String left;
        while ((left = processes(instance)).contains("sleep 3") && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertFalse(left.contains("sleep 3"), left);
        assertTrue(instance.alive());
    }

    @Test
    void capsOutput() throws IOException {
        SandboxInstance instance = create();

        ExecResult result = instance.channel().exec(
                new ExecRequest(List.of("head", "-c", "5000000", "/dev/zero"), 10, ENV, "/work", null, 1000));

        assertTrue(result.truncated());
        assertEquals(1000, result.stdout().length());
        assertEquals(0, result.exitCode());
    }

    @Test
    void aRootDaemonWalksThroughTheNosymfollowViewSoItIsNotDegraded() {
        assertEquals(Availability.yes(), procbox.backend().availability(),
                "a root daemon must be able to mount the walk view");
    }

    @Test
    void pingsThroughTheSandbox() throws IOException {
        PingResult ping = create().channel().ping();

        assertTrue(ping.pong());
        assertEquals(1, ping.pid());
    }

    @Test
    void enforcesTheMemoryLimit() throws IOException {
        assumeMemoryCgroup();
        assumeSystemPython();
        assertTrue(procbox.backend().capabilities().contains(Capability.MEMORY_LIMIT),
                "the host has a memory cgroup but the backend does not use it");
        Created sandbox = create(64);
        String allocate = "b = bytearray(%d * 1024 * 1024); print(len(b))";

        ExecResult small = exec(sandbox.instance(), "python3", "-c", allocate.formatted(16));
        ExecResult big = exec(sandbox.instance(), "python3", "-c", allocate.formatted(200));

        assertEquals(0, small.exitCode(), small.stderr());
        assertEquals(137, big.exitCode(), "the OOM killer should end it: " + big.stderr());
        assertTrue(Files.isDirectory(Path.of(sandbox.instance().state().data().get("cgroup"))));
    }

    @Test
    void refusesMemoryLimitsWithoutAMemoryCgroup() throws IOException {
        replaceProcbox(new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534, tmp.resolve("none"),
                false)));
        InstanceSpec spec = new InstanceSpec("t-nolimit", Files.createDirectory(tmp.resolve("t-nolimit")), 64);

        ApiException e = assertThrows(ApiException.class, () -> procbox.create(spec));

        assertEquals(501, e.status());
        assertTrue(e.getMessage().startsWith("memory_limit_mib is not supported on this host: "), e.getMessage());
    }

    @Test
    void reportsWhatBubblewrapSaidWhenTheLaunchFails() throws IOException {
        replaceProcbox(new Procbox(new ProcboxSettings(Path.of("/usr/bin/ls"), 65534, 65534, tmp.resolve("none"),
                false)));
        InstanceSpec spec = new InstanceSpec("t-fails", Files.createDirectory(tmp.resolve("t-fails")), null);

        ApiException e = assertThrows(ApiException.class, () -> procbox.create(spec));

        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("failed to start (bubblewrap exited)"), e.getMessage());
        assertTrue(e.getMessage().contains("--info-fd"), e.getMessage());
    }

    @Test
    void anotherBackendAdoptsALiveSandbox() throws Exception {
        Created sandbox = create(null);
        exec(sandbox.instance(), "sh", "-c", "echo kept > /tmp/marker");

        SandboxInstance adopted = Procbox.root().backend().adopt(sandbox.spec(), sandbox.instance().state());

        assertTrue(adopted.alive());
        assertEquals("kept\n", exec(adopted, "cat", "/tmp/marker").stdout());
        assertEquals(sandbox.instance().state(), adopted.state());
    }

    @Test
    void destroyKillsEverythingAndAdoptThenFails() throws IOException {
        assumeMemoryCgroup();
        Created sandbox = create(256);
        SandboxInstance instance = sandbox.instance();
        exec(instance, "sh", "-c", "sleep 300 & sleep 301 &");
        long init = instance.state().pid();
        List<Long> before = hostPidsInNamespaceOf(init);
        Path cgroup = Path.of(instance.state().data().get("cgroup"));

        procbox.backend().destroy(sandbox.spec(), instance.state());
        procbox.backend().destroy(sandbox.spec(), instance.state());

        assertTrue(before.size() >= 4, before.toString());
        assertTrue(before.stream().allMatch(pid -> ProcFs.liveStartTime(pid).isEmpty()), before.toString());
        assertFalse(instance.alive());
        assertFalse(Files.exists(cgroup));
        assertThrows(InstanceGoneException.class, () -> procbox.backend().adopt(sandbox.spec(), instance.state()));
        ApiException gone = assertThrows(ApiException.class, () -> exec(instance, "true"));
        assertEquals(503, gone.status());
    }

    @Test
    void filesMoveAsBytesAsTheSandboxUserAndResolveInsideTheSandbox() throws IOException {
        SandboxInstance sb = create();
        byte[] content = { 0, 1, 2, (byte) 0xff, 0, '\n' };
        sb.channel().writeFile("/work/f.bin", content);
        assertArrayEquals(content, sb.channel().readFile("/work/f.bin", 6));
        assertEquals(413, assertThrows(ApiException.class, () -> sb.channel().readFile("/work/f.bin", 5)).status());
        assertEquals("65534 644", exec(sb, "stat", "-c", "%u %a", "/work/f.bin").stdout().strip());

        exec(sb, "chmod", "600", "/work/f.bin");
        sb.channel().writeFile("/work/f.bin", new byte[] { 'x' });
        assertEquals("600 1", exec(sb, "stat", "-c", "%a %s", "/work/f.bin").stdout().strip(), "a replaced file keeps its mode");

        Path secret = Files.writeString(tmp.resolve("secret"), "host\n");
        exec(sb, "ln", "-s", secret.toString(), "/work/link");
        assertEquals(404, assertThrows(ApiException.class, () -> sb.channel().readFile("/work/link", 100)).status());
        exec(sb, "sh", "-c", "echo root-only > /tmp/private; chmod 000 /tmp/private; mkdir /work/dir");
        assertEquals(403, assertThrows(ApiException.class, () -> sb.channel().readFile("/tmp/private", 100)).status());
        assertEquals(400, assertThrows(ApiException.class, () -> sb.channel().readFile("/work/dir", 100)).status());
        assertEquals(400, assertThrows(ApiException.class, () -> sb.channel().writeFile("/work/dir", new byte[1])).status());
        assertEquals(403, assertThrows(ApiException.class, () -> sb.channel().writeFile("/usr/x", new byte[1])).status());
        sb.channel().writeFile("/work/link", new byte[] { 'y' });
        assertEquals("host\n", Files.readString(secret));
    }
}
