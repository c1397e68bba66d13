package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run, on 256 MiB QEMU VMs of the {@code default} image whose guests hold
 * 96 MiB in their tmpfs: (a) a cold VM woken by its first exec (the exec's round trip, which starts
 * a QEMU from the saved state, loads it and runs the guest) against a cold boot of the same image
 * to its first exec (create, then the exec); rounds alternate, after one untimed round of each.
 * (b) The host memory the VM held before it went cold (its QEMU's resident set, which counts the
 * guest RAM it touched) against what it holds cold (any process of it, and its RAM file).
 */
@ExtendWith(Bench.class)
class ColdTierBenchmark {
    static final Goal RESUME_RATIO = Goal.atMost(
            "a cold 256 MiB VM to its first exec / a cold boot of the same image to its first exec, p50", 0.5, "×", 26);
    static final Goal FREED = Goal.atLeast("resident memory freed by demotion to cold, of what the VM held", 90, "%", 26);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 5;
    static final Map<String, Object> VM = Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1);

    @TempDir
    Path dir;

    @Test
    void wakeFromColdAgainstColdBootAndMemoryFreed(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features", "core,api-v1,qemu,fingerprint-sha256"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());

        List<Double> woken = new ArrayList<>();
        List<Double> booted = new ArrayList<>();
        List<Double> freed = new ArrayList<>();
        long heldBefore = 0;
        long heldCold = 0;
        for (int round = 0; round <= ROUNDS; round++) {
            Map<String, Object> idle = new java.util.HashMap<>(VM);
            idle.put("idle", Map.of("cold_after_secs", 2));
            String vm = api.createSandbox(idle);
            Api.sh(api, vm, "dd if=/dev/urandom of=/tmp/fill bs=1M count=96 2>/dev/null; echo ok");
            long pid = api.get("/v1/sandboxes/" + vm).body().get("pid").asLong();
            long before = residentKiB(pid);
            awaitCold(api, vm);
            long cold = heldKiB(daemon, vm);

            long t0 = System.nanoTime();
            JsonNode r = api.exec(vm, "true");
            double wakeMs = Stats.millisSince(t0);
            if (r.get("exit_code").asInt() != 0) {
                throw new AssertionError("the exec that woke it failed: " + r);
            }
            api.delete("/v1/sandboxes/" + vm);

            t0 = System.nanoTime();
            String fresh = api.createSandbox(VM);
            api.exec(fresh, "true");
            double bootMs = Stats.millisSince(t0);
            api.delete("/v1/sandboxes/" + fresh);
            if (round > 0) {
                woken.add(wakeMs);
                booted.add(bootMs);
                freed.add(100.0 * (before - cold) / before);
                heldBefore = before;
                heldCold = cold;
            }
        }

        report.add(new Table("256 MiB VM, 96 MiB held in its guest", "n", "p50 ms", "p99 ms")
                .latency("cold VM: its first exec (QEMU started from the saved state, loaded, run)", woken)
                .latency("cold boot of the same image: create, then its first exec", booted));
        report.add(String.format("host memory of the VM, last round: %d MiB resident while warm, %d MiB while cold",
                heldBefore >> 10, heldCold >> 10));
        report.check(RESUME_RATIO, Stats.p50(woken) / Stats.p50(booted));
        report.check(FREED, Stats.min(freed));
    }

    private static void awaitCold(Api api, String vm) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!"cold".equals(api.get("/v1/sandboxes/" + vm).body().path("tier").asText())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not cold within 60 s: " + api.get("/v1/sandboxes/" + vm).body());
            }
            Thread.sleep(100);
        }
    }

    /** VmRSS of a process, in KiB (0 if it is gone). */
    private static long residentKiB(long pid) throws IOException {
        Path status = Path.of("/proc", Long.toString(pid), "status");
        if (!Files.exists(status)) {
            return 0;
        }
        try (Stream<String> lines = Files.lines(status)) {
            return lines.filter(l -> l.startsWith("VmRSS:")).mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", "")))
                    .findFirst().orElse(0);
        }
    }

    /** What a cold VM still holds: the resident sets of processes that name its directory, and its RAM files in memory. */
    private static long heldKiB(Daemon daemon, String vm) throws IOException {
        String mark = daemon.stateDir().resolve("sandboxes").resolve(vm).toString();
        long kib = 0;
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("[0-9]+")).toList()) {
                try {
                    String cmdline = new String(Files.readAllBytes(p.resolve("cmdline"))).replace('\0', ' ');
                    if (cmdline.contains(mark)) {
                        kib += residentKiB(Long.parseLong(p.getFileName().toString()));
                    }
                } catch (IOException gone) {
                    // the process ended while it was read
                }
            }
        }
        try (Stream<Path> shm = Files.list(Path.of("/dev/shm"))) {
            for (Path d : shm.filter(p -> p.getFileName().toString().startsWith("vivarium-qemu")).toList()) {
                try (Stream<Path> files = Files.list(d)) {
                    for (Path f : files.filter(f -> f.getFileName().toString().startsWith(vm + ".memory")).toList()) {
                        kib += Files.size(f) >> 10;
                    }
                }
            }
        }
        return kib;
    }
}
