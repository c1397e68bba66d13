package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.ChangeSetIT.assertError;
import static io.vivarium.itests.e2e.ChangeSetIT.ok;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon killed ({@code kill -9}) in the middle of a plain {@code snapshot} and of a
 * {@code restore} of a real QEMU VM, then started again: the VM is re-adopted (same QEMU, running,
 * answering), and the checkpoint is whole or absent, never half there: listed in the qcow2 exactly
 * when it restores, and restoring it brings its content back. Then a pause that outlives a daemon
 * restart. One VM and one test, since a restart's daemon deletes the sandboxes when its test ends.
 *
 * <p>To kill the daemon while QEMU is really saving or loading the VM's state, the guest first
 * fills 64 MiB of its RAM with random data (a state QEMU takes a moment to write or read), and the
 * daemon is killed as soon as QEMU's own I/O ({@code /proc/PID/io}) shows it moving that state,
 * with the request still unanswered. QEMU is daemonized: it finishes the command on its own.
 */
class VmCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features", "core,api-v1,procbox,qemu,fingerprint-sha256");
    private static final String TAG = "before-crash";

    @TempDir
    static Path state;
    static Daemon daemon;
    static Api api;
    static String id;
    static long qemuPid;

    @BeforeAll
    static void oneVm() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        id = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1));
        qemuPid = api.get("/v1/vms/" + id).body().get("pid").asLong();
    }

    @Test
    void aDaemonKilledDuringASnapshotOrARestoreLeavesTheVmAdoptedAndTheCheckpointWholeOrAbsent() throws Exception {
        Api.sh(api, id, "mkdir -p /work/src && echo 1 > /work/src/a");
        ok(api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("sh", "-c",
                "head -c 64m /dev/urandom > /tmp/fill"), "timeout_secs", 300)));

        killDuring("/v1/vms/" + id + "/snapshot");
        assertReadopted();
        boolean taken = checkpointsOnDisk().contains(TAG);
        if (taken) {
            // QEMU finished the save: it is complete and restores
            Api.sh(api, id, "echo 2 > /work/src/a");
            ok(api.post("/v1/vms/" + id + "/restore", Map.of("tag", TAG)));
            assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "the checkpoint taken during the crash is whole");
            assertError(api.post("/v1/vms/" + id + "/snapshot", Map.of("tag", TAG)), 409, TAG);
        } else {
            assertEquals(404, api.post("/v1/vms/" + id + "/restore", Map.of("tag", TAG)).status(),
                    "a checkpoint not in the qcow2 is not restorable either");
            assertEquals(201, api.post("/v1/vms/" + id + "/snapshot", Map.of("tag", TAG)).status(),
                    "and its tag is free");
        }

        Api.sh(api, id, "echo 3 > /work/src/a");
        killDuring("/v1/vms/" + id + "/restore");
        assertReadopted();
        String a = Api.sh(api, id, "cat /work/src/a");
        assertTrue(a.equals("1\n") || a.equals("3\n"), "restored or not, nothing in between: " + a);
        assertEquals(List.of(TAG), checkpointsOnDisk(), "the checkpoint stays, and nothing else was registered");
        ok(api.post("/v1/vms/" + id + "/restore", Map.of("tag", TAG)));
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "and it restores after the crash");

        JsonNode paused = ok(api.post("/v1/sandboxes/" + id + "/pause", ""));
        assertEquals("paused", paused.get("status").asText(), paused.toString());
        assertError(api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))), 409, "paused");
        assertEquals(0, daemon.stop());
        restart();
        assertEquals("paused", api.get("/v1/vms/" + id).body().get("status").asText(), "a restart finds it paused");
        JsonNode resumed = ok(api.post("/v1/sandboxes/" + id + "/resume", ""));
        assertEquals("running", resumed.get("status").asText(), resumed.toString());
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "and it runs on");
    }

    /** Posts {@code {"tag"}} to {@code path} and kills the daemon while QEMU moves the VM's state for it. */
    private static void killDuring(String path) throws Exception {
        long before = qemuIoBytes();
        CompletableFuture<Integer> request = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post(path, Map.of("tag", TAG)).status();
            } catch (Exception e) {
                return -1; // the daemon is killed under it
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        // no pause between looks: a save or load lasts a fraction of a second
        while (qemuIoBytes() - before < STATE_MOVING) {
            assertTrue(System.nanoTime() < deadline, "QEMU moved no VM state within 60 s of " + path);
            assertTrue(!request.isDone(), path + " answered " + request.getNow(0) + " before QEMU moved any state");
            Thread.onSpinWait();
        }
        daemon.kill9();
        assertEquals(-1, request.get(60, TimeUnit.SECONDS), "the daemon was killed before it answered " + path);
        restart();
    }

    /** More I/O than an idle guest makes in a moment, far less than its state: QEMU is saving or loading it. */
    private static final long STATE_MOVING = 8L << 20;

    /** What QEMU has read and written so far ({@code rchar + wchar}). */
    private static long qemuIoBytes() {
        try {
            return Files.readAllLines(Path.of("/proc", Long.toString(qemuPid), "io")).stream()
                    .filter(l -> l.startsWith("rchar:") || l.startsWith("wchar:"))
                    .mapToLong(l -> Long.parseLong(l.substring(6).trim())).sum();
        } catch (IOException e) {
            throw new IllegalStateException("QEMU " + qemuPid + " is gone", e);
        }
    }

    private static void restart() throws Exception {
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    private static void assertReadopted() throws Exception {
        JsonNode vm = api.get("/v1/vms/" + id).body();
        assertEquals("running", vm.get("status").asText(), vm.toString());
        assertEquals(qemuPid, vm.get("pid").asLong(), "the same QEMU, re-adopted");
        assertEquals("up\n", Api.sh(api, id, "echo up"));
    }

    /** The snapshot tags in the qcow2, read from the host ({@code -U}: QEMU holds the image). */
    private static List<String> checkpointsOnDisk() throws IOException, InterruptedException {
        Path disk = daemon.stateDir().resolve("sandboxes").resolve(id).resolve("disk.qcow2");
        Bounded.Ran listed = Bounded.run(Duration.ofSeconds(30), "qemu-img", "snapshot", "-U", "-l", disk.toString());
        String out = listed.output();
        assertEquals(0, listed.exitCode(), out);
        return out.lines().skip(2).map(l -> Arrays.asList(l.trim().split("\\s+")))
                .filter(cols -> cols.size() > 1).map(cols -> cols.get(1)).toList();
    }
}
