package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.TerminalSize;
import io.vivarium.api.spi.AttachedVolume;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.GuestProcess;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.RootImage;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contract every {@link SandboxBackend} passes, as containerd's snapshotters all pass
 * {@code SnapshotterSuite}. A backend's test extends this class, supplies {@link #newBackend} and
 * {@link #killInstance}, and declares in {@link #lacks()} what it cannot do: the checks that need
 * it are then skipped with that reason, never passed. A backend that is not
 * {@linkplain SandboxBackend#availability() available} on this host skips every check with its
 * own reason.
 *
 * <p>The suite plays core: it gives each instance a private directory below a temporary state
 * directory, fills every field of an {@link ExecRequest} as core does, destroys what it created
 * and then deletes the directory, even when a check fails. A check fails, too, when anything of an
 * instance is left on the host after its destroy: a process, a mount or a file
 * ({@link InstanceLeftovers}). Commands are POSIX {@code sh} with coreutils, which every sandbox and
 * guest image carries.
 *
 * <p>Checks that only exec into an instance and leave it as they found it share one per test
 * class ({@link #shared()}), so that a backend whose instances are VMs boots once for them, not
 * once per check; checks about an instance's lifecycle or its create arguments make their own.
 */
public abstract class SandboxBackendSuite {

    /** What a backend may lack; each check names what it needs. */
    public enum Feature {
        /**
         * exec runs real processes in the instance: argv, environment, cwd and stdin reach the
         * command, its exit status and output come back, a timeout kills its process group, and a
         * background process it starts outlives it.
         */
        PROCESSES,
        /**
         * The instance has a resident process its guest channel talks to (an agent, or a
         * keep-alive whose namespaces exec enters) that {@link #killAgent} can kill.
         */
        AGENT,
        /**
         * The instance enforces {@link InstanceSpec#pidsLimit()} (forks past it fail inside) and
         * {@link InstanceSpec#diskLimitMib()} (writing past it fails with ENOSPC inside).
         */
        LIMITS,
        /**
         * An instance of network mode {@code none} has loopback alone: its own network namespace
         * (or guest), no interface of the host's.
         */
        ISOLATED_NETWORK
    }

    /** How long a condition that should come about promptly may take on a loaded machine. */
    protected static final Duration PATIENCE = Duration.ofSeconds(15);

    private static final AtomicInteger IDS = new AtomicInteger();
    /** Exit 0 if the process with the pid in $1 is running (a zombie counts as gone). */
    /**
     * Whether {@code $1} is a live {@code sleep} (what {@link #startBackground} starts), read with
     * shell builtins only: a restored guest hands out its pids again, and a forked helper of this
     * very check could otherwise be the pid asked about.
     */
    private static final Duration BACKGROUND_START = Duration.ofSeconds(10);
    private static final String RUNNING_SCRIPT =
            "read -r _ c s _ 2>/dev/null </proc/$1/stat && [ \"$c\" = '(sleep)' ] && [ \"$s\" != Z ]";

    /** Core's state directory stand-in: each instance gets a private directory below it. */
    @TempDir
    protected Path stateDir;

    /** The state directory of the shared instance, which outlives each check's {@link #stateDir}. */
    @TempDir
    static Path sharedStateDir;
    /** The instance the sharing checks of the running test class use, made by the first of them; null until then. */
    private static Created shared;
    /** The backend object that created {@link #shared}. */
    private static SandboxBackend sharedBy;
    /** Whether {@link #shared}'s state names host processes (its backend runs {@link Feature#PROCESSES}). */
    private static boolean sharedRunsProcesses;

    private SandboxBackend backend;
    private final List<Created> created = new ArrayList<>();
    /** Background processes the checks started, by instance id: killed before destroy, for backends whose destroy leaves them. */
    private final Map<String, List<String>> backgrounds = new HashMap<>();

    /** One instance the suite created, with the latest state it persisted and the backend that holds it. */
    protected record Created(InstanceSpec spec, SandboxInstance instance) {
    }

    /**
     * A new backend object. Called once per check, and again to stand for the next activation (a
     * daemon restart or a bundle update), which must adopt what the previous one created.
     *
     * @param stateDir the daemon's state directory; instance directories are below it
     */
    protected abstract SandboxBackend newBackend(Path stateDir);

    /** What the backend under test cannot do, with the reason each check that needs it is skipped. */
    protected Map<Feature, String> lacks() {
        return Map.of();
    }

    /**
     * Ends {@code instance} from outside, as a crash would (its processes killed, its VM gone),
     * leaving its persisted state and directory behind.
     */
    protected abstract void killInstance(SandboxInstance instance) throws Exception;

    /**
     * Kills the instance's agent (or keep-alive) the way a misbehaving sandbox process could, for
     * example with {@code kill -9}. Implement it unless {@link Feature#AGENT} is declared missing.
     */
    protected void killAgent(SandboxInstance instance) throws Exception {
        fail(getClass().getSimpleName() + " must implement killAgent or declare Feature.AGENT in lacks()");
    }

    /** The spec of a new instance; override to exercise a backend's own options. */
    protected InstanceSpec spec(String id, Path dir, Integer pidsLimit, Integer diskLimitMib) {
        return new InstanceSpec(id, dir, null, null, null, pidsLimit, diskLimitMib);
    }

    /**
     * The storage strategies core would hand {@link SandboxBackend#create}: by default none, for a
     * backend that stores nothing at create (one that does reports {@link SandboxBackend#storedKinds()}
     * and its test supplies them, e.g. with {@link FixedStorage}).
     */
    protected StorageStrategies storage() {
        return FixedStorage.of();
    }

    /**
     * The pause seam the backend's bundle registers beside {@code backend}, or null when it
     * registers none: the pause check is then skipped with that reason.
     */
    protected PauseControl pauseControl(SandboxBackend backend) {
        return null;
    }

    /**
     * The cold tier's seam the backend's bundle registers beside {@code backend}, or null when it
     * registers none: the hibernation checks are then skipped with that reason. A backend that
     * registers it registers {@link #pauseControl} too (core pauses an instance before saving it).
     */
    protected Hibernation hibernation(SandboxBackend backend) {
        return null;
    }

    @BeforeEach
    final void startBackend() {
        backend = newBackend(stateDir);
        Availability availability = backend.availability();
        Assumptions.assumeTrue(availability.available(),
                () -> backend.name() + " is not available on this host: " + availability.reason());
    }

    /** Destroys every instance the check created, as core does, and fails if any is left on the host. */
    @AfterEach
    final void destroyEverything() {
        List<Throwable> failures = new ArrayList<>();
        if (shared != null) {
            try {
                killBackgrounds(shared.instance());
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        for (Created c : created) {
            try {
                killBackgrounds(c.instance());
                InstanceLeftovers.destroy(backend, c.spec(), c.instance().state(), runsProcesses());
            } catch (RuntimeException | AssertionError e) {
                failures.add(e);
            }
        }
        created.clear();
        backgrounds.clear();
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError("the clean-up failed: " + failures.get(0).getMessage(),
                    failures.get(0));
            failures.stream().skip(1).forEach(error::addSuppressed);
            throw error;
        }
    }

    /**
     * Destroys the shared instance after the last check of the class, with the backend object that
     * made it, and fails if it is left on the host.
     */
    @AfterAll
    static void destroyShared() {
        if (shared == null) {
            return;
        }
        Created c = shared;
        SandboxBackend by = sharedBy;
        shared = null;
        sharedBy = null;
        InstanceLeftovers.destroy(by, c.spec(), c.instance().state(), sharedRunsProcesses);
    }

    // ---- the checks --------------------------------------------------------------------------

    @Test
    void createdInstanceIsAliveAndAnswers() throws IOException {
        Created c = create();
        SandboxInstance i = c.instance();
        assertEquals(c.spec().id(), i.id());
        assertTrue(i.alive(), "a created instance is alive");
        assertTrue(i.channel().ping().pong(), "a created instance answers ping");
        assertTrue(i.workspace().startsWith("/"), "the workspace is an absolute path: " + i.workspace());
        assertNotNull(i.state(), "a created instance has a state to persist");
    }

    @Test
    void execPassesArgvUntouched() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        ExecResult r = exec(i, "/bin/sh", "-c", "printf '[%s]' \"$@\"", "sh", "a b", "", "$HOME", "*", "'\"");
        assertEquals("[a b][][$HOME][*]['\"]", r.stdout(), "each argument arrives as one argv element, never through a shell");
        assertEquals(0, r.exitCode());
    }

    @Test
    void execSetsTheRequestedEnvironmentAndNoOther() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        Map<String, String> env = new HashMap<>(defaultEnv(i));
        env.put("VIVARIUM_KIT", "x y=z");
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/usr/bin/env"), 30, env, i.workspace(), null, 1 << 20));
        assertEquals(0, r.exitCode(), r.stderr());
        List<String> lines = r.stdout().lines().toList();
        assertTrue(lines.contains("VIVARIUM_KIT=x y=z"), r.stdout());
        for (String name : System.getenv().keySet()) {
            if (!env.containsKey(name)) {
                assertFalse(lines.stream().anyMatch(l -> l.startsWith(name + "=")),
                        "the host's " + name + " leaked into the command's environment: " + r.stdout());
            }
        }
    }

    @Test
    void execRunsInTheRequestedDirectory() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        assertEquals(0, exec(i, "/bin/sh", "-c", "mkdir sub && echo here > sub/marker").exitCode());
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/bin/cat", "marker"), 30, defaultEnv(i),
                i.workspace() + "/sub", null, 1 << 20));
        assertEquals("here\n", r.stdout(), r.stderr());
        ExecResult home = exec(i, "/bin/sh", "-c", "cat sub/marker");
        assertEquals("here\n", home.stdout(), "the default cwd is the workspace: " + home.stderr());
        assertEquals(0, exec(i, "/bin/rm", "-r", "sub").exitCode());
    }

    @Test
    void execFeedsStdinAndAnEmptyOneWhenThereIsNone() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        String input = "line one\nünïcode\n".repeat(1000);
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/bin/cat"), 30, defaultEnv(i), i.workspace(), input,
                1 << 20));
        assertEquals(input, r.stdout());
        ExecResult none = i.channel().exec(new ExecRequest(List.of("/bin/cat"), 30, defaultEnv(i), i.workspace(), null,
                1 << 20));
        assertEquals("", none.stdout());
        assertFalse(none.timedOut(), "with no stdin, a reader sees end of file at once");
    }

    @Test
    void execReportsExitStatusAndSignals() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        ExecResult seven = exec(i, "/bin/sh", "-c", "echo out; echo err >&2; exit 7");
        assertEquals(7, seven.exitCode());
        assertEquals("out\n", seven.stdout());
        assertEquals("err\n", seven.stderr());
        assertFalse(seven.timedOut());
        assertFalse(seven.truncated());
        assertEquals(128 + 9, exec(i, "/bin/sh", "-c", "kill -9 $$").exitCode(), "killed by signal N is 128+N");
    }

    @Test
    void timeoutKillsTheWholeProcessGroup() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        ExecResult r = i.channel().exec(new ExecRequest(
                List.of("/bin/sh", "-c", "sleep 300 & echo $! > bg.pid; sleep 300"), 2, defaultEnv(i), i.workspace(),
                null, 1 << 20));
        assertTrue(r.timedOut(), "the command outlived its timeout: " + r);
        String pid = exec(i, "/bin/cat", "bg.pid").stdout().strip();
        assertTrue(pid.matches("\\d+"), "the command recorded its background child: " + pid);
        awaitTrue("the background grandchild " + pid + " is killed with its group",
                () -> !processRuns(i, pid));
        assertEquals(0, exec(i, "/bin/rm", "bg.pid").exitCode());
    }

    @Test
    void outputPastTheCapIsCutAndReported() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        ExecResult r = i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c",
                "head -c 10000000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2"), 60, defaultEnv(i),
                i.workspace(), null, 1000));
        assertEquals("a".repeat(1000), r.stdout());
        assertEquals("b".repeat(1000), r.stderr());
        assertTrue(r.truncated());
        assertEquals(0, r.exitCode(), "a command writing past the cap is never blocked or killed for it");
        assertFalse(r.timedOut());
        ExecResult exact = i.channel().exec(new ExecRequest(List.of("/usr/bin/printf", "12345"), 30, defaultEnv(i),
                i.workspace(), null, 5));
        assertEquals("12345", exact.stdout());
        assertFalse(exact.truncated(), "output of exactly the cap is not truncated");
    }

    @Test
    void aStartedCommandsOutputIsReadAsItIsWrittenAndItsGroupCanBeSignalled() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        GuestProcess running = i.channel().start(new ExecRequest(List.of("/bin/sh", "-c", "echo first; echo oops >&2; sleep 300"),
                60, defaultEnv(i), i.workspace(), null, 1 << 20));
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        long until = System.nanoTime() + PATIENCE.toNanos();
        while (!(out.toString().equals("first\n") && err.toString().equals("oops\n")) && System.nanoTime() < until) {
            GuestProcess.Output o = running.read(Duration.ofSeconds(1));
            assertFalse(o.exited(), "the command still sleeps: " + o);
            out.append(new String(o.stdout(), StandardCharsets.UTF_8));
            err.append(new String(o.stderr(), StandardCharsets.UTF_8));
        }
        assertEquals("first\n", out.toString(), "what the command wrote is read while it runs");
        assertEquals("oops\n", err.toString());
        running.signal(15);
        GuestProcess.Output end = readToTheEnd(running, new StringBuilder());
        assertEquals(128 + 15, end.exitCode(), "SIGTERM to its group ends it: " + end);

        GuestProcess capped = i.channel().start(new ExecRequest(List.of("/bin/sh", "-c", "printf 1234567890; exit 4"), 30,
                defaultEnv(i), i.workspace(), null, 5));
        StringBuilder all = new StringBuilder();
        GuestProcess.Output last = readToTheEnd(capped, all);
        assertEquals("12345", all.toString());
        assertTrue(last.truncated(), "past the cap: " + last);
        assertEquals(4, last.exitCode());
        assertFalse(last.timedOut());

        GuestProcess reader = i.channel().start(new ExecRequest(List.of("/bin/cat"), 30, defaultEnv(i), i.workspace(),
                "first ", 1 << 20), true);
        reader.write("then more".getBytes(StandardCharsets.UTF_8), true);
        StringBuilder echoed = new StringBuilder();
        assertEquals(0, readToTheEnd(reader, echoed).exitCode(), "eof on its open stdin ends cat");
        assertEquals("first then more", echoed.toString(), "what was written to its open stdin, after the request's");
    }

    @Test
    void aCommandRunsOnATerminalOfItsSizeThatIsResized() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        GuestProcess shell = i.channel().startTerminal(new ExecRequest(List.of("/bin/sh", "-c",
                "tty; stty size; echo on-stderr >&2; read x; stty size; exit 6"), 60, defaultEnv(i), i.workspace(), null,
                1 << 20), new TerminalSize(30, 100));
        StringBuilder shown = new StringBuilder();
        long until = System.nanoTime() + PATIENCE.toNanos();
        while (!shown.toString().contains("on-stderr\r\n") && System.nanoTime() < until) {
            GuestProcess.Output o = shell.read(Duration.ofSeconds(1));
            assertFalse(o.exited(), "the shell waits for a line: " + o + " " + shown);
            assertEquals(0, o.stderr().length, "a terminal has one output: stderr comes as stdout");
            shown.append(new String(o.stdout(), StandardCharsets.UTF_8));
        }
        assertTrue(shown.toString().matches("(?s)/dev/pts/[0-9]+\\r\\n30 100\\r\\non-stderr\\r\\n"),
                "its stdin, stdout and stderr are a terminal of the size asked (a terminal ends lines with CR LF): " + shown);
        shell.resize(new TerminalSize(40, 120));
        shell.write("\n".getBytes(StandardCharsets.UTF_8), false);
        StringBuilder rest = new StringBuilder();
        assertEquals(6, readToTheEnd(shell, rest).exitCode());
        assertTrue(rest.toString().endsWith("40 120\r\n"), "resized: " + rest);
    }

    private static GuestProcess.Output readToTheEnd(GuestProcess p, StringBuilder stdout) {
        long until = System.nanoTime() + PATIENCE.toNanos();
        while (System.nanoTime() < until) {
            GuestProcess.Output o = p.read(Duration.ofSeconds(1));
            stdout.append(new String(o.stdout(), StandardCharsets.UTF_8));
            if (o.exited()) {
                return o;
            }
        }
        throw new AssertionError("the command did not end within " + PATIENCE.toSeconds() + " s");
    }

    @Test
    void backgroundProcessSurvivesBetweenExecs() throws IOException {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        String pid = startBackground(i);
        assertTrue(processRuns(i, pid), "the background process " + pid + " outlives the exec that started it");
        assertTrue(processRuns(i, pid), "and the exec after that");
    }

    @Test
    void execsRunConcurrently() throws Exception {
        need(Feature.PROCESSES);
        SandboxInstance i = shared();
        int n = 4;
        // each waits inside the instance until all have started: a backend that ran execs one at
        // a time would let the first time out. The shell counts the files by globbing, which needs
        // no stat (coreutils' ls stats with AT_NO_AUTOMOUNT, which runsc before 2024 rejects)
        String barrier = "touch started.$1; while [ $(set -- started.*; echo $#) -lt " + n + " ]; do sleep 0.05; done; echo $1";
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<ExecResult>> results = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                String tag = Integer.toString(k);
                results.add(pool.submit(() -> i.channel().exec(new ExecRequest(
                        List.of("/bin/sh", "-c", barrier, "sh", tag), 30, defaultEnv(i), i.workspace(), null, 1 << 20))));
            }
            for (int k = 0; k < n; k++) {
                ExecResult r = results.get(k).get(60, TimeUnit.SECONDS);
                assertFalse(r.timedOut(), "exec " + k + " waited for the others, which never ran beside it");
                assertEquals(k + "\n", r.stdout(), "exec " + k + " got its own output");
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, exec(i, "/bin/sh", "-c", "rm started.*").exitCode());
    }

    @Test
    void aNewBackendAdoptsALiveInstance() throws Exception {
        Created c = create();
        boolean processes = !lacks().containsKey(Feature.PROCESSES);
        String pid = processes ? startBackground(c.instance()) : null;
        if (processes) {
            assertEquals(0, exec(c.instance(), "/bin/sh", "-c", "echo kept > kept").exitCode());
        }
        InstanceState persisted = c.instance().state();

        SandboxInstance adopted = adoptByANewBackend(c, persisted);

        assertEquals(c.spec().id(), adopted.id());
        assertTrue(adopted.alive());
        assertTrue(adopted.channel().ping().pong());
        assertEquals(persisted, adopted.state(), "adoption finds the same instance, not a new one");
        if (processes) {
            assertEquals("kept\n", exec(adopted, "/bin/cat", "kept").stdout(), "the workspace survives the adoption");
            assertTrue(processRuns(adopted, pid), "a background process survives the adoption");
        }
    }

    @Test
    void adoptingADeadInstanceSaysItIsGone() throws Exception {
        Created c = create();
        InstanceState persisted = c.instance().state();
        killInstance(c.instance());
        awaitTrue("the killed instance reports itself dead", () -> !c.instance().alive());
        SandboxBackend next = newBackend(stateDir);
        assertThrows(InstanceGoneException.class, () -> next.adopt(c.spec(), persisted));
        backend = next;
        // the cleanup then destroys what is left, which must work too
    }

    @Test
    void destroyIsIdempotent() throws Exception {
        Created c = create();
        InstanceState persisted = c.instance().state();
        backend.destroy(c.spec(), persisted);
        assertFalse(c.instance().alive(), "a destroyed instance is not alive");
        backend.destroy(c.spec(), persisted);
        deleteTree(c.spec().dir()); // as core does after destroy; a retry may still come
        backend.destroy(c.spec(), persisted);
        assertThrows(InstanceGoneException.class, () -> newBackend(stateDir).adopt(c.spec(), persisted));
    }

    @Test
    void destroyWithAnEmptyStateCleansUpAnInterruptedCreate() throws IOException {
        String id = newId();
        InstanceSpec spec = spec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), null, null);
        InstanceLeftovers.destroy(backend, spec, new InstanceState(0, Map.of()), runsProcesses());
        assertFalse(Files.exists(spec.dir()), "core removes the directory after the destroy");
    }

    @Test
    void aDeadAgentIsReportedOrRecovered() throws Exception {
        need(Feature.AGENT);
        SandboxInstance i = create().instance();
        killAgent(i);
        awaitTrue("after its agent was killed the instance is reported dead or is usable again",
                () -> !i.alive() || usable(i));
    }

    @Test
    void forksPastThePidsLimitFailInside() throws IOException {
        need(Feature.PROCESSES);
        need(Feature.LIMITS);
        assertTrue(backend.capabilities().contains(Capability.PIDS_LIMIT),
                "reported in its capabilities, or core refuses pids_limit");
        SandboxInstance i = create(32, null).instance();
        // the forks run in a subshell, which exits at the first refused fork; the count and the
        // clean-up after it use only shell builtins, which need no fork
        ExecResult r = exec(i, "/bin/sh", "-c", "(n=0; while [ $n -lt 100 ]; do sleep 60 >/dev/null 2>&1 & "
                + "echo $! >> started; n=$((n+1)); done) 2>/dev/null; "
                + "n=0; while read p; do n=$((n+1)); kill -9 $p; done < started; echo $n");
        int started = Integer.parseInt(r.stdout().strip());
        assertTrue(started >= 1 && started < 32, "at most the limit of 32 tasks could be started, got " + started + ": " + r);
        awaitTrue("the sandbox forks again once its tasks are gone", () -> usable(i));
    }

    @Test
    void writingPastTheDiskLimitGivesEnospcInside() throws IOException {
        need(Feature.PROCESSES);
        need(Feature.LIMITS);
        assertTrue(backend.capabilities().contains(Capability.DISK_LIMIT),
                "reported in its capabilities, or core refuses disk_limit_mib");
        SandboxInstance i = create(null, 32).instance();
        ExecResult fill = exec(i, "/bin/sh", "-c", "dd if=/dev/zero of=fill bs=1M count=64 2>&1; echo status $?");
        assertTrue(fill.stdout().contains("No space left on device"), fill.stdout());
        assertFalse(fill.stdout().contains("status 0"), fill.stdout());
        assertEquals(0, exec(i, "/bin/rm", "fill").exitCode(), "freeing the space works");
        assertEquals(0, exec(i, "/bin/sh", "-c", "echo again > again").exitCode(), "and writing works again");
    }

    @Test
    void anInstanceOnAnImagesRootRunsAsItsUserOnItReadOnlyAndWritesItsWorkspace() throws IOException {
        need(Feature.PROCESSES);
        Assumptions.assumeTrue(backend.capabilities().contains(Capability.ROOT_IMAGE),
                () -> backend.name() + " reports no root_image in its capabilities");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/bin/busybox")), "the image's root is made of the host's "
                + "/bin/busybox (apt-get install busybox)");
        Path rootfs = OciTestImages.root(stateDir.resolve("images").resolve("sha256-0").resolve("rootfs"), List.of());
        RootImage image = new RootImage("sha256:" + "0".repeat(64), rootfs, Map.of("FOO", "bar"), "/home/app", "app",
                OciTestImages.UID, OciTestImages.GID, List.of(), List.of());
        String id = newId();
        InstanceSpec plain = spec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), null, null);
        InstanceSpec spec = new InstanceSpec(plain.id(), plain.dir(), plain.memoryLimitMib(), plain.vcpus(), plain.image(),
                plain.pidsLimit(), plain.diskLimitMib(), plain.network(), plain.resolver(), plain.volumes(), image);
        Created c = new Created(spec, backend.create(spec, storage(), operation()));
        created.add(c);
        ExecResult r = exec(c.instance(), "/bin/sh", "-c", "id -u; id -g; grep -c '^app:x:" + OciTestImages.UID
                + ":' /etc/passwd; ls /usr 2>/dev/null; touch /work/mine && echo writes-work; "
                + "touch /etc/mine 2>/dev/null || echo root-read-only");
        assertEquals(OciTestImages.UID + "\n" + OciTestImages.GID + "\n1\nwrites-work\nroot-read-only\n", r.stdout(),
                "as the image's user, on its root (its passwd, no /usr), read-only, its workspace its own: " + r);
    }

    @Test
    void evalKeepsStateAndReturnsExceptionsWhenTheBackendReportsIt() throws IOException {
        Assumptions.assumeTrue(backend.capabilities().contains(Capability.EVAL),
                () -> backend.name() + " reports no eval in its capabilities");
        EvalCheck.run(shared());
    }

    @Test
    void aPausedInstanceSaysSoAndRunsOnWhenResumed() throws IOException {
        PauseControl pause = pauseControl(backend);
        Assumptions.assumeTrue(pause != null, () -> backend.name() + " registers no PauseControl");
        SandboxInstance i = create().instance();
        pause.pause(i);
        assertEquals(SandboxStatus.PAUSED, i.status(), "a paused instance says so");
        assertTrue(i.alive(), "a paused instance is alive");
        pause.resume(i);
        assertEquals(SandboxStatus.RUNNING, i.status(), "a resumed instance runs");
        assertTrue(i.channel().ping().pong(), "and answers");
    }

    @Test
    void aColdInstanceHasFreedWhatRanAndWakesAsItWasTwiceOver() throws IOException {
        Hibernation h = hibernation(backend);
        Assumptions.assumeTrue(h != null, () -> backend.name() + " registers no Hibernation");
        need(Feature.PROCESSES);
        Created c = create();
        SandboxInstance i = c.instance();
        exec(i, "/bin/sh", "-c", "echo kept > kept");
        String pid = startBackground(i);
        SandboxInstance running = i;
        assertEquals(409, assertThrows(ApiException.class, () -> h.save(running, operation())).status(),
                "a running instance is not saved: it would run on past its state");
        for (int spell = 1; spell <= 2; spell++) {
            long ran = i.state().pid();
            pauseControl(backend).pause(i);
            InstanceState saved = h.save(i, operation());
            assertEquals(SandboxStatus.PAUSED, i.status(), "spell " + spell + ": saving leaves the instance paused");
            assertFalse(h.cold(i), "spell " + spell + ": not cold until released");
            SandboxInstance cold = h.release(i, saved);
            c = replace(c, cold);
            assertEquals(SandboxStatus.PAUSED, i.status(), "spell " + spell + ": the instance core showed until the "
                    + "release returned says cold (paused), never dead");
            assertTrue(h.cold(cold) && cold.alive(), "spell " + spell + ": the released instance is cold and alive");
            assertEquals(SandboxStatus.PAUSED, cold.status(), "spell " + spell + ": a cold instance is paused");
            assertEquals(saved, cold.state(), "spell " + spell + ": its state is the saved one");
            assertFalse(holdsMemory(ran), "spell " + spell + ": what ran (pid " + ran + ") is gone, its memory freed");
            i = h.wake(cold, operation());
            c = replace(c, i);
            h.discardSaved(i);
            assertEquals(SandboxStatus.RUNNING, i.status(), "spell " + spell + ": woken, its saved state discarded, it runs");
            assertFalse(h.cold(i), "spell " + spell);
            assertEquals("kept\n", exec(i, "/bin/cat", "kept").stdout(), "spell " + spell + ": its files are kept");
            assertTrue(processRuns(i, pid), "spell " + spell + ": its background process runs on");
        }
    }

    @Test
    void aSavedInstanceIsAdoptedAsItWasWithoutItsRecordAndColdWithIt() throws Exception {
        Hibernation first = hibernation(backend);
        Assumptions.assumeTrue(first != null, () -> backend.name() + " registers no Hibernation");
        need(Feature.PROCESSES);
        Created c = create();
        exec(c.instance(), "/bin/sh", "-c", "echo kept > kept");
        InstanceState before = c.instance().state();
        pauseControl(backend).pause(c.instance());
        first.save(c.instance(), operation());

        // a daemon killed before core recorded the saved state: the instance as it was, paused
        c = adoptedByANewBackend(c, before);
        assertEquals(SandboxStatus.PAUSED, c.instance().status(), "adopted as it was: paused");
        pauseControl(backend).resume(c.instance());
        assertEquals("kept\n", exec(c.instance(), "/bin/cat", "kept").stdout(), "and it runs on when resumed");

        // killed after the record, before the release: cold, and what still ran is ended
        long ran = c.instance().state().pid();
        pauseControl(backend).pause(c.instance());
        InstanceState saved = hibernation(backend).save(c.instance(), operation());
        c = adoptedByANewBackend(c, saved);
        Hibernation h = hibernation(backend);
        assertTrue(h.cold(c.instance()), "adopted from the saved state: cold");
        assertEquals(SandboxStatus.PAUSED, c.instance().status());
        assertFalse(holdsMemory(ran), "what still ran (pid " + ran + ") is ended by the adoption");
        c = replace(c, h.wake(c.instance(), operation()));
        assertEquals("kept\n", exec(c.instance(), "/bin/cat", "kept").stdout(), "woken from the adopted cold state");
    }

    /** Whether the host process {@code pid} holds memory: not gone, nor a zombie its reaper has yet to collect. */
    private static boolean holdsMemory(long pid) throws IOException {
        Path status = Path.of("/proc", Long.toString(pid), "status");
        try {
            return Files.readString(status).contains("VmRSS");
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    @Test
    void anInstanceWithoutANetworkHasLoopbackAlone() throws IOException {
        need(Feature.PROCESSES);
        need(Feature.ISOLATED_NETWORK);
        SandboxInstance i = shared();
        assertTrue(i.networkAddress().isEmpty(), "network mode none: no address the host reaches it at");
        ExecResult r = exec(i, "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
        assertEquals(0, r.exitCode(), r.stderr());
        assertEquals("lo\n", r.stdout(), "network mode none: loopback is its only interface");
    }

    @Test
    void anEgressInstanceHasAnAddressOfItsOwnThatTheHostReachesUntilItIsDestroyed() throws Exception {
        Assumptions.assumeTrue(backend.capabilities().contains(Capability.NETWORK_EGRESS),
                () -> backend.name() + " reports no " + Capability.NETWORK_EGRESS + " here: core refuses egress for it");
        need(Feature.PROCESSES);
        String id = newId();
        InstanceSpec base = spec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), null, null);
        InstanceSpec spec = new InstanceSpec(base.id(), base.dir(), base.memoryLimitMib(), base.vcpus(), base.image(),
                base.pidsLimit(), base.diskLimitMib(), new NetworkPolicy(NetworkPolicy.EGRESS, List.of(), List.of()), null);
        Created c = new Created(spec, backend.create(spec, storage(), operation()));
        created.add(c);
        String address = c.instance().networkAddress()
                .orElseThrow(() -> new AssertionError("an egress instance has an address the host reaches it at"));
        // the kernel's table of local addresses where there is one; gVisor's network stack has only the
        // routes: eth0's own /30 on the link, and the default route through the host's end of it
        byte[] a = InetAddress.getByName(address).getAddress();
        String network = routeHex(a, a[3] & 0xfc);
        String gateway = routeHex(a, (a[3] & 0xfc) + 1);
        ExecResult own = exec(c.instance(), "/bin/sh", "-c", "if [ -e /proc/net/fib_trie ]; then grep -c \"^ *|-- "
                + address.replace(".", "\\\\.") + "$\" /proc/net/fib_trie; else grep -c -E \"^eth0[[:space:]]+(" + network
                + "[[:space:]]+00000000|00000000[[:space:]]+" + gateway + ")[[:space:]]\" /proc/net/route | grep -x 2; fi");
        assertEquals(0, own.exitCode(), "the address " + address + " is on an interface of the instance's own: " + own);
        assertTrue(InetAddress.getByName(address).isReachable(5000), "the host reaches " + address);
        backend.destroy(c.spec(), c.instance().state());
        assertFalse(InetAddress.getByName(address).isReachable(1000), "nothing answers at " + address + " once destroyed");
    }

    /** {@code address} with its last byte {@code last}, as {@code /proc/net/route} writes it: hex, least significant byte first. */
    private static String routeHex(byte[] address, int last) {
        return String.format("%02X%02X%02X%02X", last & 0xff, address[2] & 0xff, address[1] & 0xff, address[0] & 0xff);
    }

    /**
     * Volumes as core gives them: host directories to bind; or, for a backend that attaches them as
     * disks ({@code volume_disks}), their ext4 files, whose writes must be in the file once the
     * instance is destroyed right after them (no sync: its destroy freezes them).
     */
    @Test
    void volumesAreMountedWhereAskedAndReadOnlyWhereAsked() throws IOException {
        Assumptions.assumeTrue(backend.capabilities().contains(Capability.VOLUMES),
                () -> backend.name() + " reports no " + Capability.VOLUMES + " here: core refuses volumes for it");
        need(Feature.PROCESSES);
        boolean disks = backend.capabilities().contains(Capability.VOLUME_DISKS);
        Path writable = Files.createDirectories(stateDir.resolve("volume-binds").resolve("rw"));
        Path readOnly = Files.createDirectories(stateDir.resolve("volume-binds").resolve("ro"));
        Files.writeString(readOnly.resolve("g"), "from the host\n");
        for (Path dir : List.of(writable, readOnly)) {
            // as core makes a volume's root: every user of the sandbox may write it
            Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        }
        Path writableImage = disks ? ext4Of(writable) : null;
        Path readOnlyImage = disks ? ext4Of(readOnly) : null;
        String id = newId();
        InstanceSpec base = spec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), null, null);
        InstanceSpec spec = new InstanceSpec(base.id(), base.dir(), base.memoryLimitMib(), base.vcpus(), base.image(),
                base.pidsLimit(), base.diskLimitMib(), base.network(), base.resolver(),
                List.of(new AttachedVolume("rw", writable, "/mnt/rw", false, writableImage, null),
                        new AttachedVolume("ro", readOnly, "/mnt/ro", true, readOnlyImage, null)));
        Created c = new Created(spec, backend.create(spec, storage(), operation()));
        created.add(c);

        ExecResult r = exec(c.instance(), "sh", "-c", "echo from the sandbox > /mnt/rw/f && cat /mnt/ro/g"
                + " && if touch /mnt/ro/x 2>/dev/null; then echo wrote; else echo refused; fi");
        assertEquals(0, r.exitCode(), r.stderr());
        assertEquals("from the host\nrefused\n", r.stdout(), "the read-only volume is read, and refuses a write");
        if (disks) {
            created.remove(c);
            backend.destroy(c.spec(), c.instance().state());
            assertTrue(ext4File(writableImage, "f").output().contains("from the sandbox"),
                    "the write just before the destroy is in the volume's file");
            Bounded.Ran x = ext4File(readOnlyImage, "x");
            assertTrue(x.output().contains("not found"), "nothing was written into the read-only volume: " + x.output());
            return;
        }
        assertEquals("from the sandbox\n", Files.readString(writable.resolve("f")), "the writable volume's file is on the host");
        assertFalse(Files.exists(readOnly.resolve("x")), "nothing was written into the read-only volume");
    }

    /** An ext4 file system with {@code dir}'s files, its root mode 1777 as core makes a volume's. */
    private static Path ext4Of(Path dir) throws IOException {
        Path image = dir.resolveSibling(dir.getFileName() + ".ext4");
        for (String[] command : List.of(
                new String[] {"mkfs.ext4", "-q", "-F", "-m", "0", "-d", dir.toString(), image.toString(), "16M"},
                new String[] {"debugfs", "-w", "-R", "sif / mode 041777", image.toString()})) {
            Bounded.Ran ran = Bounded.run(Duration.ofSeconds(30), command);
            assertEquals(0, ran.exitCode(), String.join(" ", command) + ": " + ran.output());
        }
        return image;
    }

    /** What {@code debugfs} reads of the file {@code name} at the root of the ext4 file system {@code image}. */
    private static Bounded.Ran ext4File(Path image, String name) throws IOException {
        return Bounded.run(Duration.ofSeconds(30), "debugfs", "-R", "cat /" + name, image.toString());
    }

    // ---- helpers for the checks and for subclasses -------------------------------------------

    /** Skips the running check, with the backend's reason, if it lacks {@code feature}. */
    protected final void need(Feature feature) {
        String reason = lacks().get(feature);
        Assumptions.assumeTrue(reason == null, () -> backend.name() + " lacks " + feature + ": " + reason);
    }

    /** Creates an instance with the backend's default limits, which the suite destroys after the check. */
    protected final Created create() throws IOException {
        return create(null, null);
    }

    /** Creates an instance with these limits (null for the backend's default), which the suite destroys after the check. */
    protected final Created create(Integer pidsLimit, Integer diskLimitMib) throws IOException {
        String id = newId();
        InstanceSpec spec = spec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), pidsLimit,
                diskLimitMib);
        Created c = new Created(spec, backend.create(spec, storage(), operation()));
        created.add(c);
        return c;
    }

    /**
     * The instance this test class's sharing checks use, with the backend's default limits: made
     * on first use, made afresh if an earlier check left it dead or unusable (that check has failed
     * already), destroyed after the class. It stays with the backend object that made it, which
     * the kit does not close (a subclass closes a backend object only within a check, before the
     * next one adopts), rather than being adopted by each check's: a backend may serve only one
     * client per instance. A check that uses it leaves it as it found it: no files or processes of
     * its own stay behind (those started with {@link #startBackground} are killed after the check).
     */
    protected final SandboxInstance shared() throws IOException {
        if (shared != null && !(shared.instance().alive() && usable(shared.instance()))) {
            Created broken = shared;
            shared = null;
            InstanceLeftovers.destroy(sharedBy, broken.spec(), broken.instance().state(), sharedRunsProcesses);
        }
        if (shared == null) {
            String id = newId();
            InstanceSpec spec = spec(id, Files.createDirectories(sharedStateDir.resolve("sandboxes").resolve(id)), null,
                    null);
            shared = new Created(spec, backend.create(spec, storage(), operation()));
            sharedBy = backend;
            sharedRunsProcesses = runsProcesses();
        }
        return shared.instance();
    }

    /** Whether the instances' states name host processes: they run {@link Feature#PROCESSES}. */
    private boolean runsProcesses() {
        return !lacks().containsKey(Feature.PROCESSES);
    }

    /** The backend the kit currently holds: the latest that adopted. */
    protected final SandboxBackend backend() {
        return backend;
    }

    /** The context core gives a long call (a create, a checkpoint): five minutes, never cancelled. */
    protected static OperationContext operation() {
        return OperationContext.until(java.time.Instant.now().plus(Duration.ofMinutes(5)));
    }

    /** Runs {@code args} with core's defaults: 30 s, 1 MiB per stream, the workspace as cwd and HOME. */
    protected static ExecResult exec(SandboxInstance instance, String... args) {
        return instance.channel().exec(new ExecRequest(List.of(args), 30, defaultEnv(instance), instance.workspace(),
                null, 1 << 20));
    }

    /** The environment core gives every command. */
    protected static Map<String, String> defaultEnv(SandboxInstance instance) {
        return Map.of("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
                "HOME", instance.workspace(), "LANG", "C.UTF-8");
    }

    /** Waits until {@code condition} holds, failing with {@code what} after {@link #PATIENCE}. */
    protected static void awaitTrue(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within " + PATIENCE.toSeconds() + " s: " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted while waiting until " + what);
            }
        }
    }

    private static String newId() {
        return "kit-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    /** Starts a process in the background that outlives its exec; returns its pid as the instance sees it. */
    protected final String startBackground(SandboxInstance instance) {
        ExecResult r = exec(instance, "/bin/sh", "-c", "sleep 600 >/dev/null 2>&1 </dev/null & echo $!");
        String pid = r.stdout().strip();
        assertTrue(pid.matches("\\d+"), "started a background process: " + r);
        backgrounds.computeIfAbsent(instance.id(), k -> new ArrayList<>()).add(pid);
        // $! is printed as soon as the shell forks; under load the child may still be the forked shell, not yet sleep
        long deadline = System.nanoTime() + BACKGROUND_START.toNanos();
        while (!processRuns(instance, pid)) {
            assertTrue(System.nanoTime() < deadline, "the background process " + pid + " did not become sleep within "
                    + BACKGROUND_START.toSeconds() + " s after the exec that started it ended");
        }
        return pid;
    }

    /** True if the process {@code pid} (as the instance sees it) runs in the instance. */
    protected static boolean processRuns(SandboxInstance instance, String pid) {
        return exec(instance, "/bin/sh", "-c", RUNNING_SCRIPT, "sh", pid).exitCode() == 0;
    }

    private void killBackgrounds(SandboxInstance instance) {
        for (String pid : backgrounds.getOrDefault(instance.id(), List.of())) {
            if (instance.alive()) {
                exec(instance, "/bin/kill", "-KILL", pid);
            }
        }
    }

    private static boolean usable(SandboxInstance instance) {
        try {
            return exec(instance, "/bin/echo", "back").stdout().equals("back\n");
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Makes {@code now} (adopted, or relaunched by a restore) what the kit destroys in place of
     * {@code old}'s instance; returns what the kit holds now.
     */
    protected final Created replace(Created old, SandboxInstance now) {
        Created next = new Created(old.spec(), now);
        created.set(created.indexOf(old), next);
        return next;
    }

    /**
     * A new backend object, standing for the next activation, adopts {@code old}'s instance from
     * {@code state} and becomes the one the kit holds.
     */
    protected final SandboxInstance adoptByANewBackend(Created old, InstanceState state) throws InstanceGoneException {
        return adoptedByANewBackend(old, state).instance();
    }

    /** {@link #adoptByANewBackend}, returning what the kit holds now. */
    protected final Created adoptedByANewBackend(Created old, InstanceState state) throws InstanceGoneException {
        SandboxBackend next = newBackend(stateDir);
        SandboxInstance adopted = next.adopt(old.spec(), state);
        backend = next;
        return replace(old, adopted);
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
