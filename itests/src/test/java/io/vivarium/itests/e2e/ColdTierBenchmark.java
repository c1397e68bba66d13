package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
 * guest RAM it touched) against what it holds cold (any process of it, and its RAM file). Then the
 * same for gVisor sandboxes (256 MiB limit, 96 MiB in their /tmp) where runsc runs: woken against a
 * fresh create, and the resident sets of its processes (sandbox and gofer) before and while cold.
 */
@ExtendWith(Bench.class)
class ColdTierBenchmark {
    static final Goal RESUME_RATIO = Goal.atMost(
            "a cold 256 MiB VM to its first exec / a cold boot of the same image to its first exec, p50", 0.5, "×", 26);
    static final Goal FREED = Goal.atLeast("resident memory freed by demotion to cold, of what the VM held", 90, "%", 26);
    static final Goal FREED_GVISOR = Goal.atLeast(
            "resident memory freed by demotion to cold, of what the gVisor sandbox held", 90, "%", 26);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 5;
    static final Map<String, Object> VM = Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1);
    static final Map<String, Object> GVISOR = Map.of("backend", "gvisor", "memory_limit_mib", 256);
    static final Duration SETTLE = Duration.ofSeconds(2);
    static final String FILL = "dd if=/dev/urandom of=/tmp/fill bs=1M count=96 2>/dev/null; echo ok";

    @TempDir
    Path dir;

    /** What the rounds measured: wake and fresh start times, and the share of memory freed, with the last round's holdings. */
    record Spells(List<Double> woken, List<Double> started, List<Double> freed, long heldBefore, long heldCold) {
    }

    @Test
    void wakeFromColdAgainstColdBootAndMemoryFreed(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        boolean gvisor = Host.gvisorMissing() == null;
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features",
                "core,api-v1,qemu,fingerprint-sha256" + (gvisor ? ",gvisor" : "")));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());

        // a VM's QEMU holds the guest RAM it touched; its RAM file is not counted twice
        Spells vm = spells(api, VM, (id, pid) -> residentKiB(pid), daemon);
        report.add(new Table("256 MiB VM, 96 MiB held in its guest", "n", "p50 ms", "p99 ms")
                .latency("cold VM: its first exec (QEMU started from the saved state, loaded, run)", vm.woken())
                .latency("cold boot of the same image: create, then its first exec", vm.started()));
        report.add(String.format("host memory of the VM, last round: %d MiB resident while warm, %d MiB while cold",
                vm.heldBefore() >> 10, vm.heldCold() >> 10));
        report.check(RESUME_RATIO, Stats.p50(vm.woken()) / Stats.p50(vm.started()));
        report.check(FREED, Stats.min(vm.freed()));

        if (!gvisor) {
            report.add("gVisor: not run (" + Host.gvisorMissing() + ")");
            return;
        }
        Spells gv = spells(api, GVISOR, (id, pid) -> heldKiB(daemon, id), daemon);
        report.add(new Table("gVisor sandbox (256 MiB limit), 96 MiB held in its /tmp", "n", "p50 ms", "p99 ms")
                .latency("cold sandbox: its first exec (a container restored from its checkpoint)", gv.woken())
                .latency("a fresh sandbox: create, then its first exec", gv.started()));
        report.add(String.format("gVisor: woken / fresh, p50: %.2f×; host memory of the sandbox (its sandbox and gofer "
                + "processes), last round: %d MiB resident while warm, %d MiB while cold",
                Stats.p50(gv.woken()) / Stats.p50(gv.started()), gv.heldBefore() >> 10, gv.heldCold() >> 10));
        report.check(FREED_GVISOR, Stats.min(gv.freed()));
    }

    /** How much host memory a sandbox holds while warm, given its id and its instance's pid. */
    @FunctionalInterface
    interface Holding {
        long kib(String id, long pid) throws IOException;
    }

    /**
     * {@link #ROUNDS} rounds after an untimed one: a sandbox of {@code spec} that fills its memory, goes
     * cold and is woken by an exec, then a fresh one of the same spec to its first exec.
     */
    private static Spells spells(Api api, Map<String, Object> spec, Holding holding, Daemon daemon) throws Exception {
        List<Double> woken = new ArrayList<>();
        List<Double> started = new ArrayList<>();
        List<Double> freed = new ArrayList<>();
        long heldBefore = 0;
        long heldCold = 0;
        for (int round = 0; round <= ROUNDS; round++) {
            Map<String, Object> idle = new java.util.HashMap<>(spec);
            idle.put("idle", Map.of("cold_after_secs", 2));
            String id = api.createSandbox(idle);
            Api.sh(api, id, FILL);
            long pid = api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
            long before = holding.kib(id, pid);
            api.awaitTier(id, "cold", Duration.ofSeconds(60));
            // what the cold tier holds, once the helpers of the move (a runsc delete, in the background) ended
            Thread.sleep(SETTLE.toMillis());
            long cold = heldKiB(daemon, id);

            long t0 = System.nanoTime();
            JsonNode r = api.exec(id, "true");
            double wakeMs = Stats.millisSince(t0);
            if (r.get("exit_code").asInt() != 0) {
                throw new AssertionError("the exec that woke it failed: " + r);
            }
            api.delete("/v1/sandboxes/" + id);

            t0 = System.nanoTime();
            String fresh = api.createSandbox(spec);
            api.exec(fresh, "true");
            double startMs = Stats.millisSince(t0);
            api.delete("/v1/sandboxes/" + fresh);
            if (round > 0) {
                woken.add(wakeMs);
                started.add(startMs);
                freed.add(100.0 * (before - cold) / before);
                heldBefore = before;
                heldCold = cold;
            }
        }
        return new Spells(woken, started, freed, heldBefore, heldCold);
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

    /** What a sandbox holds: the resident sets of processes that name its directory, and RAM files of it in memory. */
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
