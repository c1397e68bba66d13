package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * procbox's pool of sandboxes launched ahead, with real sandboxes: a pooled create is a sandbox
 * like a cold one, and no pooled sandbox outlives its backend or, killed, its daemon.
 */
class ProcboxSandboxPoolTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "HOME", "/work");

    @TempDir
    Path state;

    private final List<ProcboxBackend> backends = new ArrayList<>();
    private final List<Created> created = new ArrayList<>();

    private record Created(ProcboxBackend backend, InstanceSpec spec, SandboxInstance instance) {
    }

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    /** Destroys what the test created, then closes the backends, which discards their pools: nothing stays mounted in the temporary directory. */
    @AfterEach
    void cleanUp() {
        created.forEach(c -> c.backend().destroy(c.spec(), c.instance().state()));
        backends.forEach(ProcboxBackend::close);
    }

    @Test
    void aPooledCreateIsASandboxLikeAColdOne() throws Exception {
        ProcboxBackend backend = pooledBackend(null, 1);
        SandboxInstance cold = create(backend).instance();
        await("the pool launched a sandbox", () -> backend.pooledReady() == 1);

        Created pooled = create(backend);

        assertTrue(Files.isDirectory(ProcboxInstance.pooledHome(pooled.spec().dir())), "it came from the pool");
        assertFalse(Files.exists(ProcboxInstance.pooledHome(((ProcboxInstance) cold).dir())), "the first create was cold");
        SandboxInstance instance = pooled.instance();
        assertEquals(pooled.spec().id() + "\n", exec(instance, "hostname").stdout(), "its hostname is its own id");
        assertEquals("", exec(instance, "ls", "-A", "/work").stdout(), "a fresh workspace");
        assertEquals(0, exec(instance, "sh", "-c", "echo x > /work/f").exitCode(), "a writable workspace");
        assertEquals(List.of("x"), Files.readAllLines(((ProcboxInstance) instance).forWalks().hostDir().resolve("f")),
                "the daemon sees the workspace through its walk view");
        assertEquals(List.of("x"), Files.readAllLines(ProcboxInstance.workspaceDir(pooled.spec().dir()).resolve("f")),
                "the workspace is at work/ in the sandbox's directory, as a cold sandbox's");
        assertEquals("", exec(cold, "ls", "-A", "/work").stdout(), "not shared with another sandbox");
        assertEquals(workspaceSize(cold), workspaceSize(instance), "the default workspace size");
        SandboxRecord record = ((ProcboxInstance) instance).sandbox();
        assertEquals(List.of(Integer.toString(ProcboxSettings.DEFAULT_PIDS_LIMIT)),
                Files.readAllLines(record.pidsCgroup().resolve("pids.max")), "the default pids limit");
        assertTrue(Files.readString(LimitCgroups.procsFile(record.pidsCgroup())).contains(
                Long.toString(instance.state().pid())), "its init is in its pids cgroup");
        assertEquals(exec(cold, "id").stdout(), exec(instance, "id").stdout(), "the same sandbox user");
        assertNotEquals(cold.state().pid(), instance.state().pid());

        ProcboxBackend next = pooledBackend(null, 0);
        SandboxInstance adopted = next.adopt(pooled.spec(), instance.state());
        assertEquals("x\n", exec(adopted, "cat", "/work/f").stdout(), "a new backend adopts it");
    }

    /** A sandbox {@code backend}'s pool launched, created from it; the test destroys it itself. */
    private Created takenFromThePool(ProcboxBackend backend) throws IOException {
        backend.startSandboxPool(state);
        await("the pool launched a sandbox", () -> backend.pooledReady() == 1);
        Created pooled = create(backend);
        created.remove(pooled);
        return pooled;
    }

    @Test
    void destroyEndsAPooledSandboxAndLeavesNothingMountedOrInACgroup() throws IOException {
        ProcboxBackend backend = pooledBackend(null, 1);
        Created pooled = takenFromThePool(backend);
        SandboxRecord record = ((ProcboxInstance) pooled.instance()).sandbox();

        backend.destroy(pooled.spec(), pooled.instance().state());

        assertGone(record, pooled.spec().dir());
    }

    @Test
    void aPooledSandboxTakenButNotYetRecordedByCoreIsStillDestroyed() throws IOException {
        ProcboxBackend backend = pooledBackend(null, 1);
        Created pooled = takenFromThePool(backend);
        SandboxRecord record = ((ProcboxInstance) pooled.instance()).sandbox();

        // the daemon died after the take, before core wrote the record: the next one destroys with no state
        pooledBackend(null, 0).destroy(pooled.spec(), new InstanceState(0, Map.of()));

        assertGone(record, pooled.spec().dir());
    }

    @Test
    void closingTheBackendEndsItsPooledSandboxes() throws Exception {
        assertClosingEndsThePooledSandboxes(ProcboxBackend::close);
    }

    /** What a revision being replaced does: it returns at once, and its thread ends the pool. */
    @Test
    void closingTheBackendInTheBackgroundEndsItsPooledSandboxesByTheEndOfItsThread() throws Exception {
        assertClosingEndsThePooledSandboxes(backend -> {
            Thread closing = backend.closeInBackground();
            closing.join(TimeUnit.SECONDS.toMillis(60));
            assertFalse(closing.isAlive(), "the close did not end within 60 s");
        });
    }

    private interface Closing {
        void close(ProcboxBackend backend) throws Exception;
    }

    private void assertClosingEndsThePooledSandboxes(Closing closing) throws Exception {
        ProcboxBackend backend = pooledBackend(null, 2);
        backend.startSandboxPool(state);
        await("the pool launched two sandboxes", () -> backend.pooledReady() == 2);
        List<SandboxRecord> records = pooledRecords();
        assertEquals(2, records.size());

        closing.close(backend);

        for (SandboxRecord record : records) {
            assertGone(record, state.resolve(ProcboxBackend.SANDBOX_POOL_DIR));
        }
        assertEquals(List.of(), list(state.resolve(ProcboxBackend.SANDBOX_POOL_DIR)), "the pool's directory is gone");
    }

    @Test
    void theNextDaemonEndsThePooledSandboxesOfOneThatWasKilled() throws IOException {
        // a pool named after a process that does not run: its daemon was killed with -9
        ProcboxBackend killed = pooledBackend("pool-999999999-1-killed", 2);
        killed.startSandboxPool(state);
        await("the pool launched two sandboxes", () -> killed.pooledReady() == 2);
        List<SandboxRecord> records = pooledRecords();
        assertEquals(2, records.size());

        pooledBackend(null, 0).removeAbandonedPools(state);

        for (SandboxRecord record : records) {
            assertGone(record, state.resolve(ProcboxBackend.SANDBOX_POOL_DIR));
        }
        assertFalse(Files.exists(state.resolve(ProcboxBackend.SANDBOX_POOL_DIR).resolve("pool-999999999-1-killed")));
    }

    @Test
    void aCreateWithLimitsOfItsOwnIsNeverServedFromThePool() throws IOException {
        ProcboxBackend backend = pooledBackend(null, 1);
        backend.startSandboxPool(state);
        await("the pool launched a sandbox", () -> backend.pooledReady() == 1);
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectories(state.resolve("sandboxes").resolve(id)), null,
                null, null, 64, null);
        SandboxInstance instance = backend.create(spec);
        created.add(new Created(backend, spec, instance));

        assertFalse(Files.exists(ProcboxInstance.pooledHome(spec.dir())));
        assertEquals(1, backend.pooledReady());
        assertEquals(List.of("64"), Files.readAllLines(((ProcboxInstance) instance).sandbox().pidsCgroup().resolve("pids.max")));
    }

    private ProcboxBackend pooledBackend(String poolName, int size) {
        ProcboxSettings settings = new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, ProcboxSettings.DEFAULT_PIDS_LIMIT,
                ProcboxSettings.DEFAULT_DISK_LIMIT_MIB, ProcboxSettings.defaultTemplateDir()).withSandboxPool(size);
        ProcboxBackend backend = new ProcboxBackend(settings, true, poolName);
        backends.add(backend);
        return backend;
    }

    private Created create(ProcboxBackend backend) throws IOException {
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectories(state.resolve("sandboxes").resolve(id)), null);
        Created c = new Created(backend, spec, backend.create(spec));
        created.add(c);
        return c;
    }

    /** The records the pools under {@link #state} left in their sandboxes' directories. */
    private List<SandboxRecord> pooledRecords() throws IOException {
        List<SandboxRecord> records = new ArrayList<>();
        for (Path pool : list(state.resolve(ProcboxBackend.SANDBOX_POOL_DIR))) {
            for (Path sandbox : list(pool)) {
                records.add(SandboxRecord.readPooled(sandbox).orElseThrow());
            }
        }
        return records;
    }

    private static void assertGone(SandboxRecord record, Path dir) throws IOException {
        assertFalse(record.init().isRunning(), "its init " + record.init().pid() + " was killed");
        for (Path cgroup : record.cgroups()) {
            assertFalse(Files.exists(cgroup), "its cgroup " + cgroup + " was removed");
        }
        try (Stream<String> mounts = Files.lines(Path.of("/proc/self/mountinfo"))) {
            String prefix = dir.toString();
            assertEquals(List.of(), mounts.map(ProcFs::mountPoint).filter(m -> m.startsWith(prefix)).toList(),
                    "nothing stays mounted under " + dir);
        }
    }

    private static List<Path> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> entries = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
            stream.forEach(entries::add);
        }
        return entries;
    }

    private static String workspaceSize(SandboxInstance instance) {
        return exec(instance, "sh", "-c", "df -k /work | tail -1 | awk '{print $2}'").stdout();
    }

    private static ExecResult exec(SandboxInstance instance, String... args) {
        return instance.channel().exec(new ExecRequest(List.of(args), 10, ENV, "/work", null, 1 << 20));
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within 30 s: " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted while waiting until " + what);
            }
        }
    }
}
