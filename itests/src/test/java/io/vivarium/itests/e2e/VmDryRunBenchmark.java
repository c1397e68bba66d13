package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run, on one 256 MiB QEMU VM with its 1 GiB workspace disk: the overhead of
 * a dry-run beyond its command (checkpoint, two listings, restore, clock, delete) against the
 * seed's method, a copy of the whole disk image before the command and a copy back after, each
 * with QEMU paused (SIGSTOP) while it copies and each made durable (fsync) as a copy that is to
 * protect a disk must be; rounds alternate so that machine noise hits both alike, after one
 * untimed round of each. The copied image is the VM's disk flattened to a 1 GiB raw file once
 * ({@code qemu-img convert}), copied with {@code cp --sparse=never} as a full image is; the copy
 * back goes to that file, not under the running QEMU, and no reboot follows it, which only favours
 * the copy method. Then a restore in place of the running VM, p50 of 10.
 */
@ExtendWith(Bench.class)
class VmDryRunBenchmark {
    static final Goal OVERHEAD = Goal.below("VM dry-run overhead beyond the command, p50", 1000, "ms", 9);
    static final Goal COPY_RATIO = Goal.atLeast("copy method (fsynced copies) p50 / dry-run overhead p50", 10, "×", 9);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 10;
    static final String COMMAND = "echo changed > /work/src/a";
    /** A full copy of $1 to $2, fsynced: a copy is not a safe state until it is on disk. */
    static final String DURABLE_COPY = "cp --sparse=never \"$1\" \"$2\" && sync -- \"$2\"";

    @TempDir
    Path dir;

    @Test
    void dryRunOverheadAgainstCopyingTheDiskAndRestoreInPlace(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features", "core,api-v1,qemu,fingerprint-sha256"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String vm = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1));
        Api.sh(api, vm, "mkdir -p /work/src && echo 1 > /work/src/a");
        long qemuPid = api.get("/v1/sandboxes/" + vm).body().get("pid").asLong();
        Path disk = daemon.stateDir().resolve("sandboxes").resolve(vm).resolve("disk.qcow2");
        Path image = dir.resolve("disk.raw");
        Path copy = dir.resolve("before.raw");
        run("qemu-img", "convert", "-U", "-O", "raw", disk.toString(), image.toString());

        List<Double> dryRun = new ArrayList<>();
        List<Double> copying = new ArrayList<>();
        // round 0 warms both contenders up and is not counted
        for (int round = 0; round <= ROUNDS; round++) {
            long t0 = System.nanoTime();
            JsonNode r = api.post("/v1/sandboxes/" + vm + "/dry-run", Map.of("command", COMMAND,
                    "paths", List.of("/work/src"))).body();
            double dryRunMs = Stats.millisSince(t0) - r.get("duration_ms").asDouble();
            if (!r.path("discarded").asBoolean()) {
                throw new AssertionError("dry-run not reverted: " + r);
            }

            t0 = System.nanoTime();
            paused(qemuPid, "sh", "-c", DURABLE_COPY, "sh", image.toString(), copy.toString());
            JsonNode ran = api.exec(vm, "sh", "-c", COMMAND);
            paused(qemuPid, "sh", "-c", DURABLE_COPY, "sh", copy.toString(), image.toString());
            double copyingMs = Stats.millisSince(t0) - ran.get("duration_ms").asDouble();
            Api.sh(api, vm, "echo 1 > /work/src/a");
            if (round > 0) {
                dryRun.add(dryRunMs);
                copying.add(copyingMs);
            }
        }

        Api.Response checkpoint = api.post("/v1/vms/" + vm + "/snapshot", Map.of("tag", "bench"));
        if (checkpoint.status() / 100 != 2) {
            throw new AssertionError("checkpoint failed: " + checkpoint.raw().body());
        }
        List<Double> restore = new ArrayList<>();
        for (int i = 0; i < ROUNDS; i++) {
            Api.sh(api, vm, COMMAND);
            long t0 = System.nanoTime();
            Api.Response r = api.post("/v1/vms/" + vm + "/restore", Map.of("tag", "bench"));
            restore.add(Stats.millisSince(t0));
            if (r.status() != 200) {
                throw new AssertionError("restore failed: " + r.raw().body());
            }
        }
        long diskBytes = Files.size(disk);
        api.delete("/v1/sandboxes/" + vm);

        report.add(new Table("measurement (256 MiB guest, 1 GiB workspace disk)", "n", "p50 ms", "p99 ms")
                .latency("dry-run overhead beyond the command: checkpoint (snapshot-save), listings, snapshot-load, clock, "
                        + "delete", dryRun)
                .latency("seed's method: copy the 1 GiB disk image before and back after, each fsynced, QEMU paused", copying)
                .latency("restore in place of the running VM (POST /v1/vms/{id}/restore)", restore));
        report.add(String.format("disk.qcow2 after %d dry-runs and a checkpoint: %d MiB", ROUNDS + 1, diskBytes >> 20));
        report.check(OVERHEAD, Stats.p50(dryRun));
        report.check(COPY_RATIO, Stats.p50(copying) / Stats.p50(dryRun));
    }

    /** Runs a host command with QEMU stopped (SIGSTOP), as the seed copies a disk only while the VM does not write. */
    private static void paused(long qemuPid, String... command) throws Exception {
        run("kill", "-STOP", Long.toString(qemuPid));
        try {
            run(command);
        } finally {
            run("kill", "-CONT", Long.toString(qemuPid));
        }
    }

    private static void run(String... command) throws Exception {
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(60), command);
        if (ran.exitCode() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed: " + ran.output());
        }
    }
}
