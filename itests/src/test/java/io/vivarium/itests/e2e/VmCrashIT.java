package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.ChangeSetIT.assertError;
import static io.vivarium.itests.e2e.ChangeSetIT.ok;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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
 * A daemon that dies in the middle of a plain {@code snapshot} and of a {@code restore} of a real
 * QEMU VM, then is started again: the VM is re-adopted (same QEMU, running, answering), and the
 * checkpoint is whole, never half there: QEMU finishes a job it accepted on its own, so the save
 * the daemon died in is listed, restores its content and keeps its tag, and the load it died in
 * leaves the VM running from the checkpoint. Then a pause that outlives a daemon restart. One VM
 * and one test, since a restart's daemon deletes the sandboxes when its test ends.
 *
 * <p>The daemon dies at the QEMU backend's test points {@code snapshot-save.started} and
 * {@code snapshot-load.started} ({@code -Dvivarium.test.halt.at}, a {@code Runtime.halt} as abrupt as
 * {@code kill -9}): QEMU has accepted the job and the daemon has not seen it end, however fast the host.
 */
class VmCrashIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features", "core,api-v1,procbox,qemu,fingerprint-sha256");
    private static final String TAG = "before-crash";
    private static final Duration PATIENCE = Duration.ofSeconds(120);

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
    void aDaemonThatDiesDuringASnapshotOrARestoreLeavesTheVmAdoptedAndTheCheckpointWhole() throws Exception {
        Api.sh(api, id, "mkdir -p /work/src && echo 1 > /work/src/a");

        dieDuring("/v1/vms/" + id + "/snapshot", "snapshot-save.started");
        assertReadopted();
        DeployFolder.await("QEMU to finish the save the daemon died in", PATIENCE,
                () -> checkpointsOnDisk().contains(TAG) ? true : null);
        assertEquals(List.of(TAG), tags(ok(api.get("/v1/vms/" + id + "/checkpoints"))), "listed through the API");
        Api.sh(api, id, "echo 2 > /work/src/a");
        ok(api.post("/v1/vms/" + id + "/restore", Map.of("tag", TAG)));
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "the checkpoint taken during the crash is whole");
        assertError(api.post("/v1/vms/" + id + "/snapshot", Map.of("tag", TAG)), 409, TAG);

        Api.sh(api, id, "echo 3 > /work/src/a");
        dieDuring("/v1/vms/" + id + "/restore", "snapshot-load.started");
        assertReadopted();
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "QEMU finished the load: the VM runs from the checkpoint");
        assertEquals(List.of(TAG), checkpointsOnDisk(), "the checkpoint stays, and nothing else was registered");
        Api.sh(api, id, "echo 4 > /work/src/a");
        ok(api.post("/v1/vms/" + id + "/restore", Map.of("tag", TAG)));
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "and it restores after the crash");

        JsonNode paused = ok(api.post("/v1/sandboxes/" + id + "/pause", ""));
        assertEquals("paused", paused.get("status").asText(), paused.toString());
        assertError(api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("true"))), 409, "paused");
        assertEquals(0, daemon.stop());
        restart(List.of());
        assertEquals("paused", api.get("/v1/vms/" + id).body().get("status").asText(), "a restart finds it paused");
        JsonNode resumed = ok(api.post("/v1/sandboxes/" + id + "/resume", ""));
        assertEquals("running", resumed.get("status").asText(), resumed.toString());
        assertEquals("1\n", Api.sh(api, id, "cat /work/src/a"), "and it runs on");
    }

    /**
     * Restarts the daemon so that it halts at {@code point}, posts {@code {"tag"}} to {@code path},
     * waits for the halt (the request never answered), and starts a daemon again.
     */
    private static void dieDuring(String path, String point) throws Exception {
        assertEquals(0, daemon.stop());
        restart(List.of("-Dvivarium.test.halt.at=" + point));
        CompletableFuture<Integer> request = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post(path, Map.of("tag", TAG)).status();
            } catch (Exception e) {
                return -1; // the daemon halted under it
            }
        });
        assertTrue(daemon.awaitExit(PATIENCE), "the daemon did not reach " + point + " in " + path);
        assertEquals(-1, request.get(60, TimeUnit.SECONDS), "the daemon halted before it answered " + path);
        restart(List.of());
    }

    private static List<String> tags(JsonNode checkpoints) {
        List<String> tags = new ArrayList<>();
        checkpoints.forEach(c -> tags.add(c.get("tag").asText()));
        return tags;
    }

    private static void restart(List<String> jvmOptions) throws Exception {
        daemon = daemons.start(state, FEATURES, jvmOptions);
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
