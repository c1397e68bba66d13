package io.vivarium.backend.procbox.internal;

import io.vivarium.common.mounts.MountTable;
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

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * procbox's pool of sandboxes launched ahead, with real sandboxes: a pooled create is a sandbox
 * like a cold one, and no pooled sandbox outlives its runtime or, killed, its daemon.
 */
class ProcboxSandboxPoolTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "HOME", "/work");

    @TempDir
    Path state;

    private final List<Procbox> revisions = new ArrayList<>();
    private final List<Created> created = new ArrayList<>();

    private record Created(Procbox procbox, InstanceSpec spec, SandboxInstance instance) {
    }

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    /** Destroys what the test created, then closes the runtimes, which discards their pools: nothing stays mounted in the temporary directory. */
    @AfterEach
    void cleanUp() {
        created.forEach(c -> c.procbox().backend().destroy(c.spec(), c.instance().state()));
        revisions.forEach(Procbox::close);
    }

    @Test
    void aPooledCreateIsASandboxLikeAColdOne() throws Exception {
        Procbox procbox = pooled(null, 1);
        SandboxInstance cold = create(procbox).instance();
        await("the pool launched a sandbox", () -> procbox.runtime().pool().ready() == 1);

        Created pooled = create(procbox);

        assertTrue(Files.isDirectory(ProcboxInstance.pooledHome(pooled.spec().dir())), "it came from the pool");
        assertFalse(Files.exists(ProcboxInstance.pooledHome(((ProcboxInstance) cold).dir())), "the first create was cold");
        SandboxInstance instance = pooled.instance();
        assertEquals(pooled.spec().id() + "\n", exec(instance, "hostname").stdout(), "its hostname is its own id");
        assertEquals("", exec(instance, "ls", "-A", "/work").stdout(), "a fresh workspace");
        assertEquals(0, exec(instance, "sh", "-c", "echo x > /work/f").exitCode(), "a writable workspace");
        assertEquals(List.of("x"), Files.readAllLines(((ProcboxInstance) instance).forWalks().hostDir().resolve("f")),
                "the daemon sees the workspace through its walk view");
        assertEquals(List.of("x"), Files.readAllLines(SandboxMounts.workspace(((ProcboxInstance) instance).sandbox().init()).resolve("f")),
                "the daemon reaches the workspace through the sandbox's root, as a cold sandbox's");
        assertEquals("", exec(cold, "ls", "-A", "/work").stdout(), "not shared with another sandbox");
        assertEquals(workspaceSize(cold), workspaceSize(instance), "the default workspace size");
        ProcboxRecord record = ((ProcboxInstance) instance).sandbox();
        assertEquals(List.of(Integer.toString(ProcboxSettings.DEFAULT_PIDS_LIMIT)),
                Files.readAllLines(record.pidsCgroup().resolve("pids.max")), "the default pids limit");
        assertTrue(Files.readString(LimitCgroups.procsFile(record.pidsCgroup())).contains(
                Long.toString(instance.state().pid())), "its init is in its pids cgroup");
        assertEquals(exec(cold, "id").stdout(), exec(instance, "id").stdout(), "the same sandbox user");
        assertNotEquals(cold.state().pid(), instance.state().pid());

        Procbox next = pooled(null, 0);
        SandboxInstance adopted = next.backend().adopt(pooled.spec(), instance.state());
        assertEquals("x\n", exec(adopted, "cat", "/work/f").stdout(), "a new backend adopts it");
    }

    /** A sandbox {@code procbox}'s pool launched, created from it; the test destroys it itself. */
    private Created takenFromThePool(Procbox procbox) throws IOException {
        procbox.runtime().pool().start(state);
        await("the pool launched a sandbox", () -> procbox.runtime().pool().ready() == 1);
        Created pooled = create(procbox);
        created.remove(pooled);
        return pooled;
    }

    @Test
    void destroyEndsAPooledSandboxAndLeavesNothingMountedOrInACgroup() throws IOException {
        Procbox procbox = pooled(null, 1);
        Created pooled = takenFromThePool(procbox);
        ProcboxRecord record = ((ProcboxInstance) pooled.instance()).sandbox();

        procbox.backend().destroy(pooled.spec(), pooled.instance().state());

        assertGone(record, pooled.spec().dir());
    }

    @Test
    void aPooledSandboxTakenButNotYetRecordedByCoreIsStillDestroyed() throws IOException {
        Procbox procbox = pooled(null, 1);
        Created pooled = takenFromThePool(procbox);
        ProcboxRecord record = ((ProcboxInstance) pooled.instance()).sandbox();

        // the daemon died after the take, before core wrote the record: the next one destroys with no state
        pooled(null, 0).backend().destroy(pooled.spec(), new InstanceState(0, Map.of()));

        assertGone(record, pooled.spec().dir());
    }

    @Test
    void closingTheRuntimeEndsItsPooledSandboxes() throws Exception {
        assertClosingEndsThePooledSandboxes(ProcboxRuntime::close);
    }

    /** What a revision being replaced does: it returns at once, and its thread ends the pool. */
    @Test
    void closingTheRuntimeInTheBackgroundEndsItsPooledSandboxesByTheEndOfItsThread() throws Exception {
        assertClosingEndsThePooledSandboxes(runtime -> {
            Thread closing = runtime.closeInBackground();
            closing.join(TimeUnit.SECONDS.toMillis(60));
            assertFalse(closing.isAlive(), "the close did not end within 60 s");
        });
    }

    private interface Closing {
        void close(ProcboxRuntime runtime) throws Exception;
    }

    private void assertClosingEndsThePooledSandboxes(Closing closing) throws Exception {
        Procbox procbox = pooled(null, 2);
        procbox.runtime().pool().start(state);
        await("the pool launched two sandboxes", () -> procbox.runtime().pool().ready() == 2);
        List<ProcboxRecord> records = pooledRecords();
        assertEquals(2, records.size());

        closing.close(procbox.runtime());

        for (ProcboxRecord record : records) {
            assertGone(record, state.resolve(ProcboxSandboxPool.SANDBOX_POOL_DIR));
        }
        assertEquals(List.of(), list(state.resolve(ProcboxSandboxPool.SANDBOX_POOL_DIR)), "the pool's directory is gone");
    }

    @Test
    void theNextDaemonEndsThePooledSandboxesOfOneThatWasKilled() throws IOException {
        // a pool named after a process that does not run: its daemon was killed with -9
        Procbox killed = pooled("pool-999999999-1-killed", 2);
        killed.runtime().pool().start(state);
        await("the pool launched two sandboxes", () -> killed.runtime().pool().ready() == 2);
        List<ProcboxRecord> records = pooledRecords();
        assertEquals(2, records.size());

        pooled(null, 0).runtime().removeAbandonedPools(state);

        for (ProcboxRecord record : records) {
            assertGone(record, state.resolve(ProcboxSandboxPool.SANDBOX_POOL_DIR));
        }
        assertFalse(Files.exists(state.resolve(ProcboxSandboxPool.SANDBOX_POOL_DIR).resolve("pool-999999999-1-killed")));
    }

    @Test
    void aCreateWithLimitsOfItsOwnIsNeverServedFromThePool() throws IOException {
        Procbox procbox = pooled(null, 1);
        procbox.runtime().pool().start(state);
        await("the pool launched a sandbox", () -> procbox.runtime().pool().ready() == 1);
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectories(state.resolve("sandboxes").resolve(id)), null,
                null, null, 64, null);
        SandboxInstance instance = procbox.create(spec);
        created.add(new Created(procbox, spec, instance));

        assertFalse(Files.exists(ProcboxInstance.pooledHome(spec.dir())));
        assertEquals(1, procbox.runtime().pool().ready());
        assertEquals(List.of("64"), Files.readAllLines(((ProcboxInstance) instance).sandbox().pidsCgroup().resolve("pids.max")));
    }

    private Procbox pooled(String poolName, int size) {
        Procbox procbox = Procbox.pooled(ProcboxSettings.defaultTemplateDir(), size, poolName);
        revisions.add(procbox);
        return procbox;
    }

    private Created create(Procbox procbox) throws IOException {
        String id = "t-" + UUID.randomUUID().toString().substring(0, 8);
        InstanceSpec spec = new InstanceSpec(id, Files.createDirectories(state.resolve("sandboxes").resolve(id)), null);
        Created c = new Created(procbox, spec, procbox.create(spec));
        created.add(c);
        return c;
    }

    /** The records the pools under {@link #state} left in their sandboxes' directories. */
    private List<ProcboxRecord> pooledRecords() throws IOException {
        List<ProcboxRecord> records = new ArrayList<>();
        for (Path pool : list(state.resolve(ProcboxSandboxPool.SANDBOX_POOL_DIR))) {
            for (Path sandbox : list(pool)) {
                records.add(ProcboxRecord.readPooled(sandbox).orElseThrow());
            }
        }
        return records;
    }

    private static void assertGone(ProcboxRecord record, Path dir) throws IOException {
        assertFalse(record.init().isRunning(), "its init " + record.init().pid() + " was killed");
        for (Path cgroup : record.cgroups()) {
            assertFalse(Files.exists(cgroup), "its cgroup " + cgroup + " was removed");
        }
        String prefix = dir.toString();
        assertEquals(List.of(), MountTable.all().stream().map(MountTable.Mount::mountPoint)
                .filter(m -> m.startsWith(prefix)).toList(), "nothing stays mounted under " + dir);
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
