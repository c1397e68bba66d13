package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.ChangeSetIT.assertError;
import static io.vivarium.itests.e2e.ChangeSetIT.ok;
import static io.vivarium.itests.e2e.ChangeSetIT.strings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoints of a real QEMU VM end to end, on one VM (a boot under TCG takes seconds): dry-runs
 * reverted through a checkpoint, snapshot and restore in place, one operation at a time, fifty
 * dry-runs with the disk bounded, stop and start over a daemon restart, and a daemon killed in the
 * middle of a dry-run, once its command has written (it says so on the guest's serial console, a
 * file on the host).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class VmCheckpointsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features", "core,api-v1,procbox,qemu,fingerprint-sha256");
    private static final int MEMORY_MIB = 256;
    private static final String SRC = "mkdir -p /work/src && echo 1 > /work/src/a && echo 2 > /work/src/b";
    private static final String LISTING = "find /work/src -type f | sort | xargs md5sum";
    /** Whether $1 is a live sleep, with shell builtins only (a restored guest hands its pids out again). */
    private static final String ALIVE = "read -r _ c s _ 2>/dev/null </proc/$1/stat && [ \"$c\" = '(sleep)' ] "
            + "&& [ \"$s\" != Z ] && echo alive || echo gone";

    @TempDir
    static Path state;
    static Daemon daemon;
    static Api api;
    static String id;
    /** The disk right after the boot, before any checkpoint. */
    static long bootedDisk;

    @BeforeAll
    static void oneVm() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        id = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", MEMORY_MIB, "vcpus", 1));
        Api.sh(api, id, SRC);
        bootedDisk = Files.size(disk());
    }

    @Test
    @Order(1)
    void aDryRunListsTheChangesThenRevertsFilesProcessesAndTheClock() throws Exception {
        String before = Api.sh(api, id, LISTING);
        // under TCG a loaded guest's clock runs on from the host's, so put it an hour off to see it set
        Api.sh(api, id, "date -s @$(( $(date +%s) - 3600 ))");
        JsonNode r = dryRun("echo changed > /work/src/a; rm /work/src/b; echo new > /work/src/c;"
                + " sleep 1000 >/dev/null 2>&1 </dev/null & echo $!");
        assertTrue(r.get("discarded").asBoolean(), r.toString());
        assertEquals("snapshot", r.get("reverted_via").asText());
        JsonNode c = r.get("changes");
        assertEquals(List.of("/work/src/c"), strings(c.get("added")), c.toString());
        assertEquals(List.of("/work/src/a"), strings(c.get("modified")), c.toString());
        assertEquals(List.of("/work/src/b"), strings(c.get("deleted")), c.toString());

        assertEquals(before, Api.sh(api, id, LISTING), "the files are as before");
        String pid = r.get("stdout").asText().strip();
        assertEquals("gone\n", api.exec(id, "sh", "-c", ALIVE, "sh", pid).get("stdout").asText(),
                "the background process the command started is gone");
        long skew = Long.parseLong(Api.sh(api, id, "date +%s").strip()) - System.currentTimeMillis() / 1000;
        assertTrue(Math.abs(skew) <= 2, "the guest clock is set from the host after the restore: " + skew + " s off");
        assertTrue(checkpointsOnDisk().isEmpty(), "the dry-run's checkpoint is deleted: " + checkpointsOnDisk());
    }

    @Test
    @Order(2)
    void aFailingCommandIsStillReverted() throws Exception {
        JsonNode r = dryRun("echo x > /work/src/half; exit 3");
        assertEquals(3, r.get("exit_code").asInt());
        assertTrue(r.get("discarded").asBoolean(), r.toString());
        assertEquals(List.of("/work/src/half"), strings(r.get("changes").get("added")));
        assertEquals("gone\n", Api.sh(api, id, "test -e /work/src/half && echo there || echo gone"));
    }

    /**
     * One checkpoint at a time: a deleted checkpoint's clusters are free and the next one reuses
     * them, so fifty cost what one does. A checkpoint holds at most the guest's RAM (plus device
     * state), so the disk and the file the RAM states go to (the backend's {@code vmstate}, in
     * memory) stay within what they were after the boot plus twice the RAM; growing by each
     * checkpoint would be some 50 × 64 MiB.
     */
    @Test
    @Order(3)
    void fiftyDryRunsKeepTheDiskBounded() throws Exception {
        Path vmstate = Path.of(Api.JSON.readTree(sandboxDir().resolve("sandbox.json").toFile()).findValue("vmstate").asText());
        long bootedVmstate = Files.size(vmstate);
        for (int i = 0; i < 50; i++) {
            assertTrue(dryRun("echo " + i + " > /work/src/n" + i).get("discarded").asBoolean());
        }
        long disk = Files.size(disk());
        long states = Files.size(vmstate);
        long bound = bootedDisk + bootedVmstate + 2L * MEMORY_MIB * 1024 * 1024;
        System.out.printf("disk.qcow2 + vmstate after the boot %d MiB, after 52 dry-runs %d + %d MiB (bound %d MiB)%n",
                (bootedDisk + bootedVmstate) >> 20, disk >> 20, states >> 20, bound >> 20);
        assertTrue(disk + states <= bound, "disk.qcow2 + vmstate are " + (disk + states) + " bytes, more than " + bound);
    }

    @Test
    @Order(4)
    void aSnapshotIsRestoredInPlaceWithTheSeedsStatusCodes() throws Exception {
        Api.Response taken = api.post("/v1/vms/" + id + "/snapshot", Map.of("tag", "t1"));
        assertEquals(201, taken.status(), taken.raw().body());
        assertEquals("qcow2-internal-vmstate-apart", taken.body().get("mode").asText(), taken.raw().body());
        assertTrue(taken.body().get("size_bytes").asLong() > 0, taken.raw().body());
        long qemuPid = api.get("/v1/vms/" + id).body().get("pid").asLong();
        Api.sh(api, id, "echo changed > /work/src/a");

        ok(api.post("/v1/vms/" + id + "/restore", Map.of("tag", "t1")));
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "restore brings the file back");
        JsonNode vm = api.get("/v1/vms/" + id).body();
        assertEquals("running", vm.get("status").asText(), vm.toString());
        assertEquals(qemuPid, vm.get("pid").asLong(), "restored in place, in the same QEMU");

        assertError(api.post("/v1/vms/" + id + "/snapshot", Map.of("tag", "t1")), 409, "t1");
        assertError(api.outsideTheContract().post("/v1/vms/" + id + "/restore", Map.of("tag", "../t1")), 400, "plain name");
        assertError(api.outsideTheContract().post("/v1/vms/" + id + "/snapshot", Map.of("tag", "a/b")), 400, "plain name");
        assertError(api.post("/v1/vms/" + id + "/restore", Map.of("tag", "never-taken")), 404, "never-taken");
        assertEquals(404, api.post("/v1/vms/no-such-vm/restore", Map.of("tag", "t1")).status());

        CompletableFuture<Api.Response> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "sleep 4", "paths",
                        List.of("/work/src")));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        awaitDryRunCheckpoint();
        assertEquals(409, api.post("/v1/vms/" + id + "/restore", Map.of("tag", "t1")).status(),
                "a restore while a dry-run runs");
        assertEquals(409, api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "true", "paths", List.of("/work/src")))
                .status(), "a second dry-run");
        assertTrue(ok(slow.get(120, TimeUnit.SECONDS)).get("discarded").asBoolean());
    }

    /** Both restart the daemon, whose sandboxes the extension deletes after the test that started it: so one test. */
    @Test
    @Order(5)
    void aDryRunCutShortByAKilledDaemonIsRevertedAtTheNextStartAndAStoppedVmStaysStoppedOverARestart()
            throws Exception {
        long qemuPid = api.get("/v1/vms/" + id).body().get("pid").asLong();
        // the guest's serial console is a file on the host: the command says there that it has written
        Path console = Path.of(Api.JSON.readTree(sandboxDir().resolve("sandbox.json").toFile()).findValue("console").asText());
        String wrote = "dry-run-wrote-" + System.nanoTime();
        CompletableFuture.runAsync(() -> {
            try {
                api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "echo x > /work/src/crash && echo " + wrote
                        + " > /dev/ttyS0; sleep 30", "paths", List.of("/work/src")));
            } catch (Exception e) {
                // the daemon is killed under it
            }
        });
        DeployFolder.await("the dry-run's command to write /work/src/crash", Duration.ofSeconds(60),
                () -> Files.readString(console, StandardCharsets.ISO_8859_1).contains(wrote) ? true : null);
        daemon.kill9();

        Daemon next = daemons.start(state, FEATURES);
        Api again = new Api(next.baseUrl(), next.adminToken());
        daemon = next;
        api = again;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (checkpointsOnDisk().stream().anyMatch(t -> t.startsWith("dryrun-")) || Files.exists(sandboxDir().resolve("dry-run-intent.json"))) {
            assertTrue(System.nanoTime() < deadline, "the dry-run's checkpoint is restored and deleted at start-up: "
                    + checkpointsOnDisk());
            Thread.sleep(100);
        }
        JsonNode vm = again.get("/v1/vms/" + id).body();
        assertEquals("running", vm.get("status").asText(), vm.toString());
        assertEquals(qemuPid, vm.get("pid").asLong(), "the same QEMU, re-adopted");
        assertEquals("gone\n", Api.sh(again, id, "test -e /work/src/crash && echo there || echo gone"),
                "the cut-short command's change is reverted");

        Api.sh(api, id, "echo kept > /work/kept");
        JsonNode stopped = ok(api.post("/v1/vms/" + id + "/stop", ""));
        assertEquals("stopped", stopped.get("status").asText(), stopped.toString());
        assertEquals(409, api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))).status());
        assertEquals(0, daemon.stop());
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        assertEquals("stopped", api.get("/v1/vms/" + id).body().get("status").asText(), "a restart keeps it stopped");
        JsonNode started = ok(api.post("/v1/vms/" + id + "/start", ""));
        assertEquals("running", started.get("status").asText(), started.toString());
        assertEquals("kept\n", Api.sh(api, id, "cat /work/kept"), "booted again from its disk");
    }

    private static JsonNode dryRun(String command) throws Exception {
        return ok(api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", command, "paths", List.of("/work/src"),
                "timeout_secs", 60)));
    }

    private static Path sandboxDir() {
        return daemon.stateDir().resolve("sandboxes").resolve(id);
    }

    private static Path disk() {
        return sandboxDir().resolve("disk.qcow2");
    }

    /** Waits until a dry-run's checkpoint is complete on the disk: the command runs from then on. */
    private static void awaitDryRunCheckpoint() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (checkpointsOnDisk().stream().noneMatch(t -> t.startsWith("dryrun-"))) {
            assertTrue(System.nanoTime() < deadline, "no dry-run checkpoint within 60 s");
            Thread.sleep(50);
        }
    }

    /** The snapshot tags in the qcow2, read from the host ({@code -U}: QEMU holds the image). */
    private static List<String> checkpointsOnDisk() throws IOException, InterruptedException {
        Bounded.Ran listed = Bounded.run(Duration.ofSeconds(30), "qemu-img", "snapshot", "-U", "-l", disk().toString());
        String out = listed.output();
        assertEquals(0, listed.exitCode(), out);
        // a header "Snapshot list:", a column header, then "ID TAG VM-SIZE DATE VM-CLOCK ..." rows
        return out.lines().skip(2).map(l -> Arrays.asList(l.trim().split("\\s+")))
                .filter(cols -> cols.size() > 1).map(cols -> cols.get(1)).toList();
    }
}
