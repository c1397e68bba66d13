package io.vivarium.itests.e2e;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run: deleting a 256 MiB QEMU VM that has just written 32 MiB to a writable
 * volume, by the freeze path (the delete freezes the volume in the guest, then QEMU quits; no VM
 * state captured), against the same delete of the same kind of VM capturing its memory first (a
 * checkpoint, {@code POST /v1/vms/{id}/snapshot}: RAM and device state saved, then the delete). A
 * checkpoint of a VM that writes a volume is refused (its files outlive the VM), so the contender
 * mounts the volume read-only and writes the same 32 MiB to its own disk: the same guest, the same
 * dirty data, the same two requests' worth of HTTP. Each round boots one VM of each (untimed) and
 * times the two deletes, alternating which goes first; one untimed round warms both up.
 */
@ExtendWith(Bench.class)
class VolumeDeleteBenchmark {
    static final Goal FREEZE_RATIO = Goal.atLeast(
            "delete capturing memory first p50 / delete by the freeze path p50 (256 MiB VM, 32 MiB written)", 5, "×", 26);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 7;
    static final String WRITE = "head -c 33554432 /dev/urandom > %s/blob";

    @TempDir
    Path dir;

    @Test
    void deleteByFreezingTheVolumeAgainstDeleteCapturingMemory(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features",
                "core,api-v1,qemu,fingerprint-sha256"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.expect(201, api.post("/v1/volumes", Map.of("name", "bench", "size_mib", 128)));

        List<Double> freezing = new ArrayList<>();
        List<Double> capturing = new ArrayList<>();
        for (int round = 0; round <= ROUNDS; round++) {
            double freezeMs;
            double captureMs;
            if (round % 2 == 0) {
                freezeMs = freezePath(api);
                captureMs = capturingMemory(api);
            } else {
                captureMs = capturingMemory(api);
                freezeMs = freezePath(api);
            }
            if (round > 0) {
                freezing.add(freezeMs);
                capturing.add(captureMs);
            }
        }

        report.add(new Table("delete of a 256 MiB VM after it wrote 32 MiB", "n", "p50 ms", "p99 ms")
                .latency("freeze path: DELETE (freeze the writable volume in the guest, QEMU quits, the volume fsynced)",
                        freezing)
                .latency("capturing memory first: POST /v1/vms/{id}/snapshot (RAM and devices), then DELETE", capturing));
        report.check(FREEZE_RATIO, Stats.p50(capturing) / Stats.p50(freezing));
    }

    /** A VM that wrote 32 MiB to its writable volume, deleted; the volume's file then holds them. */
    private static double freezePath(Api api) throws Exception {
        String vm = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1,
                "volumes", List.of(Map.of("name", "bench", "mount_path", "/v"))));
        written(api, vm, "/v");
        long t0 = System.nanoTime();
        Api.expect(204, api.delete("/v1/sandboxes/" + vm));
        return Stats.millisSince(t0);
    }

    /** The same VM with the volume read-only, the 32 MiB written to its own disk, checkpointed, then deleted. */
    private static double capturingMemory(Api api) throws Exception {
        String vm = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1,
                "volumes", List.of(Map.of("name", "bench", "mount_path", "/v", "read_only", true))));
        written(api, vm, "/work");
        long t0 = System.nanoTime();
        Api.expect(201, api.post("/v1/vms/" + vm + "/snapshot", Map.of("tag", "before-delete")));
        Api.expect(204, api.delete("/v1/sandboxes/" + vm));
        return Stats.millisSince(t0);
    }

    private static void written(Api api, String vm, String where) throws Exception {
        var r = api.exec(vm, "sh", "-c", String.format(WRITE, where));
        if (r.get("exit_code").asInt() != 0) {
            throw new AssertionError("the write failed: " + r);
        }
    }
}
