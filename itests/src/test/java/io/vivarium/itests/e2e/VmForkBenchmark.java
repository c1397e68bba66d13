package io.vivarium.itests.e2e;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmarks (a) and (b), side by side in one run, state on a loop-mounted XFS (reflink):
 * (a) {@value #CHILDREN} QEMU children forked from a tag (one request) until each answered an exec,
 * against {@value #CHILDREN} cold boots made at the concurrency the fork makes its children with
 * (core makes up to {@value #FORK_PARALLEL} at once), until each answered an exec; {@value #ROUNDS}
 * rounds, alternating which goes first, each with the other contender's VMs deleted, after one
 * untimed child and one untimed boot. Beside each set, the host memory it holds: the sum of the
 * QEMU processes' PSS (a page shared by k processes counts 1/k to each, so the sum counts the
 * snapshot's shared RAM pages once) and their private bytes. (b) The pause of a branch of a
 * running 256 MiB VM (a booted one, whose RAM file is shared: x-ignore-shared + reflink) and of a
 * forked child (dirty pages from pagemap).
 */
@ExtendWith(Bench.class)
class VmForkBenchmark {
    static final Goal COLD_VS_FORK = Goal.atLeast("10 cold boots / fork of 10 QEMU children, until each answered exec (p50 of "
            + "the rounds)", 5, "×", 10);
    static final Goal CHILD_MEMORY = Goal.atMost("host memory per forked child (PSS) in % of its guest RAM", 30, "%", 10);
    static final Goal BOOTED_PAUSE = Goal.atMost("branch pause of a running 256 MiB VM (booted), p50", 100, "ms", 10);
    static final Goal CHILD_PAUSE = Goal.atMost("branch pause of a running 256 MiB VM (forked child), p50", 100, "ms", 10);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int CHILDREN = 10;
    static final int ROUNDS = 3;
    /** The children core's fork makes at once (Forks.PARALLEL_CHILDREN in core): the cold boots' concurrency too. */
    static final int FORK_PARALLEL = 16;
    static final int MEMORY_MIB = 256;
    static final int BRANCHES = 5;

    @TempDir
    Path dir;

    /** One set of VMs until each answered an exec: its wall time, and its host memory (KiB: sum of PSS, private, RSS). */
    record VmSet(double millis, long pssKib, long privateKib, long rssKib) {
    }

    @Test
    void forkTenAgainstTenColdBootsAndBranchPauses(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        // every booted VM reserves its RAM file: room for the builder and the cold boots, and their branches
        Path state = daemons.xfsStateDir(dir, 8L << 30);
        Daemon daemon = daemons.start(state, List.of("--features", "core,api-v1,qemu,storage-reflink,fingerprint-sha256"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response built = api.post("/v1/snapshots", Map.of("tag", "bench", "backend", "qemu",
                "memory_limit_mib", MEMORY_MIB, "setup", List.of("sh", "-c", "echo ready > /work/ready")));
        if (built.status() != 201) {
            throw new AssertionError("build failed: " + built.body());
        }
        fork(api, 1);
        coldBoots(api, 1);

        List<VmSet> forks = new ArrayList<>();
        List<VmSet> colds = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            if (round % 2 == 0) {
                forks.add(fork(api, CHILDREN));
                colds.add(coldBoots(api, CHILDREN));
            } else {
                colds.add(coldBoots(api, CHILDREN));
                forks.add(fork(api, CHILDREN));
            }
        }

        List<Double> bootedPauses = branchPauses(api, api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib",
                MEMORY_MIB)), "booted");
        api.deleteAllSandboxes();
        String child = api.fork("bench", 1).getFirst();
        Api.sh(api, child, "head -c 16777216 /dev/urandom > /tmp/dirty");
        List<Double> childPauses = branchPauses(api, child, "child");
        api.deleteAllSandboxes();

        Table sets = new Table("round", CHILDREN + " QEMU VMs of " + MEMORY_MIB + " MiB until each answered exec", "wall",
                "sum of PSS", "PSS per VM", "private per VM", "RSS per VM");
        for (int round = 0; round < ROUNDS; round++) {
            row(sets, round + 1, "fork of " + CHILDREN + " from a tag (one request)", forks.get(round));
            row(sets, round + 1, CHILDREN + " cold boots, " + Math.min(CHILDREN, FORK_PARALLEL) + " at a time", colds.get(round));
        }
        report.add(sets);
        List<Double> ratios = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            ratios.add(colds.get(round).millis() / forks.get(round).millis());
        }
        report.add("cold / fork per round: " + ratios.stream().map(r -> String.format("%.1f×", r)).toList());
        report.add(new Table("branch of a running " + MEMORY_MIB + " MiB VM: pause_ms", "n", "p50", "max")
                .row("booted VM (RAM file share=on: device state with x-ignore-shared + reflink of the RAM)", BRANCHES,
                        Stats.p50(bootedPauses), Stats.max(bootedPauses))
                .row("forked child (share=off: device state alone + its dirty pages from pagemap)", BRANCHES,
                        Stats.p50(childPauses), Stats.max(childPauses)));
        report.check(COLD_VS_FORK, Stats.p50(colds.stream().map(VmSet::millis).toList())
                / Stats.p50(forks.stream().map(VmSet::millis).toList()));
        report.check(CHILD_MEMORY, 100.0 * Stats.p50(forks.stream().map(VmSet::pssKib).toList()) / CHILDREN / (MEMORY_MIB * 1024));
        report.check(BOOTED_PAUSE, Stats.p50(bootedPauses));
        report.check(CHILD_PAUSE, Stats.p50(childPauses));
    }

    /** Forks {@code n} children (one request), execs in each, reads their memory, deletes them. */
    private static VmSet fork(Api api, int n) throws Exception {
        long t0 = System.nanoTime();
        List<String> children = api.fork("bench", n);
        for (String id : children) {
            api.exec(id, "true");
        }
        return measuredAndDeleted(api, children, Stats.millisSince(t0));
    }

    /** Boots {@code n} VMs as the fork makes children (as many at once), execs in each, reads their memory, deletes them. */
    private static VmSet coldBoots(Api api, int n) throws Exception {
        long t0 = System.nanoTime();
        List<String> ids = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(n, FORK_PARALLEL));
        try {
            List<Future<String>> boots = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                boots.add(pool.submit(() -> api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", MEMORY_MIB))));
            }
            for (Future<String> boot : boots) {
                ids.add(Bounded.get(boot, Duration.ofMinutes(5), "a VM's create"));
            }
        } finally {
            pool.shutdownNow();
        }
        for (String id : ids) {
            api.exec(id, "true");
        }
        return measuredAndDeleted(api, ids, Stats.millisSince(t0));
    }

    private static VmSet measuredAndDeleted(Api api, List<String> ids, double millis) throws Exception {
        long pss = 0;
        long own = 0;
        long rss = 0;
        for (String id : ids) {
            Map<String, Long> kib = HostProcesses.memoryKib(api.get("/v1/sandboxes/" + id).body().get("pid").asLong());
            pss += kib.getOrDefault("Pss", 0L);
            own += kib.getOrDefault("Private_Clean", 0L) + kib.getOrDefault("Private_Dirty", 0L);
            rss += kib.getOrDefault("Rss", 0L);
        }
        api.deleteAllSandboxes();
        return new VmSet(millis, pss, own, rss);
    }

    private static List<Double> branchPauses(Api api, String id, String tag) throws Exception {
        List<Double> pauses = new ArrayList<>();
        for (int i = 0; i < BRANCHES; i++) {
            Api.Response r = api.post("/v1/sandboxes/" + id + "/branch", Map.of("tag", tag + "-" + i));
            if (r.status() != 201) {
                throw new AssertionError("branch failed: " + r.body());
            }
            pauses.add(r.body().get("pause_ms").asDouble());
        }
        return pauses;
    }

    private static void row(Table table, int round, String what, VmSet set) {
        table.row(round, what, Math.round(set.millis()) + " ms", (set.pssKib() >> 10) + " MiB",
                (set.pssKib() / CHILDREN >> 10) + " MiB", (set.privateKib() / CHILDREN >> 10) + " MiB",
                (set.rssKib() / CHILDREN >> 10) + " MiB");
    }
}
