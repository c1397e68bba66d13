package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run, on one 256 MiB QEMU VM with its 1 GiB workspace disk: the overhead of
 * a dry-run beyond its command (checkpoint, two listings, restore, clock, delete) against the
 * seed's method, a copy of the whole disk image before the command and a copy back after, each
 * with QEMU paused (SIGSTOP) while it copies; rounds alternate so machine noise hits both alike.
 * The copied image is the VM's disk flattened to a 1 GiB raw file once ({@code qemu-img convert}),
 * copied with {@code cp --sparse=never} as a full image is; the copy back goes to that file, not
 * under the running QEMU, and no reboot follows it, which only favours the copy method. Between
 * rounds, untimed, a {@code sync} writes back what the copies left dirty, which would otherwise be
 * written back during the next dry-run and charged to it. Then a
 * restore in place of the running VM, p50 of 10. Not part of {@code verify}:
 * {@code ./vivarium bench VmDryRunBenchmark}; results on stdout and in {@code target/bench/vm-dry-run.md}.
 */
class VmDryRunBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 10;
    static final String COMMAND = "echo changed > /work/src/a";

    @TempDir
    Path dir;

    @Test
    void dryRunOverheadAgainstCopyingTheDiskAndRestoreInPlace() throws Exception {
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
        for (int round = 0; round < ROUNDS; round++) {
            long t0 = System.nanoTime();
            JsonNode r = api.post("/v1/sandboxes/" + vm + "/dry-run", Map.of("command", COMMAND,
                    "paths", List.of("/work/src"))).body();
            dryRun.add((System.nanoTime() - t0) / 1e6 - r.get("duration_ms").asDouble());
            if (!r.path("discarded").asBoolean()) {
                throw new AssertionError("dry-run not reverted: " + r);
            }

            t0 = System.nanoTime();
            paused(qemuPid, "cp", "--sparse=never", image.toString(), copy.toString());
            JsonNode ran = api.exec(vm, "sh", "-c", COMMAND);
            paused(qemuPid, "cp", "--sparse=never", copy.toString(), image.toString());
            copying.add((System.nanoTime() - t0) / 1e6 - ran.get("duration_ms").asDouble());
            Api.sh(api, vm, "echo 1 > /work/src/a");
            // untimed: the 2 GiB the copies left dirty in the page cache are written back now, not
            // during the next dry-run, whose fsyncs (its intent record) would otherwise wait for them
            run("sync");
        }

        api.post("/v1/vms/" + vm + "/snapshot", Map.of("tag", "bench"));
        List<Double> restore = new ArrayList<>();
        for (int i = 0; i < ROUNDS; i++) {
            Api.sh(api, vm, COMMAND);
            long t0 = System.nanoTime();
            Api.Response r = api.post("/v1/vms/" + vm + "/restore", Map.of("tag", "bench"));
            restore.add((System.nanoTime() - t0) / 1e6);
            if (r.status() != 200) {
                throw new AssertionError("restore failed: " + r.raw().body());
            }
        }
        long diskBytes = Files.size(disk);
        api.delete("/v1/sandboxes/" + vm);

        double ours = ExecLatencyBenchmark.pct(dryRun, 50);
        double seeds = ExecLatencyBenchmark.pct(copying, 50);
        String report = String.join("\n",
                "| measurement (256 MiB guest, 1 GiB workspace disk) | n | p50 ms | p99 ms |",
                "|---|---|---|---|",
                row("dry-run overhead beyond the command: checkpoint (snapshot-save), listings, snapshot-load, clock, delete", dryRun),
                row("seed's method: copy the 1 GiB disk image before and back after, QEMU paused", copying),
                row("restore in place of the running VM (POST /v1/vms/{id}/restore)", restore),
                "",
                String.format("copy method / dry-run overhead = **%.1f×**; disk.qcow2 after %d dry-runs and a checkpoint: "
                        + "%d MiB; machine: nproc %d, load %s", seeds / ours, ROUNDS, diskBytes >> 20,
                        Runtime.getRuntime().availableProcessors(), Files.readString(Path.of("/proc/loadavg")).strip()),
                "");
        System.out.println(report);
        Path out = Path.of("target", "bench");
        Files.createDirectories(out);
        Files.writeString(out.resolve("vm-dry-run.md"), report);
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

    private static String row(String what, List<Double> ms) {
        return String.format("| %s | %d | %.0f | %.0f |", what, ms.size(), ExecLatencyBenchmark.pct(ms, 50),
                ExecLatencyBenchmark.pct(ms, 99));
    }
}
