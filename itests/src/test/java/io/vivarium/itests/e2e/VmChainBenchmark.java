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
 * Issue 10's benchmark (c) on real QEMU children, side by side in one run, state on a loop-mounted
 * XFS (reflink): a snapshot of a booted {@value #MEMORY_MIB} MiB VM, a chain of {@value #DEPTH}
 * branches of children on it ({@link VmChains}: RAM as page diffs, disk as qcow2 overlays), the top
 * compacted; then one child at a time forked from the depth-{@value #DEPTH} tag and from the
 * compacted tag, alternately ({@value #ROUNDS} each, the order swapped every round), each timed from
 * the fork request until it answered an exec, and deleted. The first fork of each is reported apart
 * (cold: the chain's links are verified once and remembered), so both sides get the same warm-up.
 */
@ExtendWith(Bench.class)
class VmChainBenchmark {
    static final Goal CHAIN_RATIO = Goal.atMost("a QEMU child from a depth-3 chain / from its compaction, warm p50", 1.2, "×",
            10);
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int MEMORY_MIB = 256;
    static final int DEPTH = 3;
    static final int ROUNDS = 6;

    @TempDir
    Path dir;

    @Test
    void spawnFromADepthThreeChainAgainstItsCompaction(BenchReport report) throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Path state = daemons.xfsStateDir(dir);
        Daemon daemon = daemons.start(state, List.of("--features", "core,api-v1,qemu,storage-reflink,fingerprint-sha256"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response built = api.post("/v1/snapshots", Map.of("tag", "bench", "backend", "qemu",
                "memory_limit_mib", MEMORY_MIB, "setup", List.of("sh", "-c", "echo ready > /work/ready")));
        if (built.status() != 201) {
            throw new AssertionError("build failed: " + built.body());
        }
        VmChains.build(api, "bench", DEPTH);
        String chain = "bench-" + DEPTH;
        long c0 = System.nanoTime();
        Api.Response compacted = api.post("/v1/snapshots/" + chain + "/compact", Map.of("to", "flat"));
        double compactMs = Stats.millisSince(c0);
        if (compacted.status() != 201) {
            throw new AssertionError("compaction failed: " + compacted.body());
        }

        List<Double> fromChain = new ArrayList<>();
        List<Double> fromFlat = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            if (round % 2 == 0) {
                fromChain.add(spawn(api, chain));
                fromFlat.add(spawn(api, "flat"));
            } else {
                fromFlat.add(spawn(api, "flat"));
                fromChain.add(spawn(api, chain));
            }
        }

        List<Double> warmChain = fromChain.subList(1, ROUNDS);
        List<Double> warmFlat = fromFlat.subList(1, ROUNDS);
        Table table = new Table("one " + MEMORY_MIB + " MiB QEMU child until it answered exec", "cold (first)", "n warm",
                "warm p50", "warm min", "warm max");
        row(table, "from the depth-" + DEPTH + " chain (RAM materialised from its page diffs per child)", fromChain);
        row(table, "from its compaction (RAM file mapped as it is)", fromFlat);
        report.add(table);
        report.add(String.format("chain / compacted, cold: %.2f×; the compaction took %.0f ms",
                fromChain.getFirst() / fromFlat.getFirst(), compactMs));
        report.check(CHAIN_RATIO, Stats.p50(warmChain) / Stats.p50(warmFlat));
    }

    /** Milliseconds from the fork request until the child answered an exec; the child is deleted after. */
    private static double spawn(Api api, String tag) throws Exception {
        long t0 = System.nanoTime();
        String child = VmChains.fork(api, tag);
        try {
            api.exec(child, "true");
            return Stats.millisSince(t0);
        } finally {
            api.delete("/v1/sandboxes/" + child);
        }
    }

    private static void row(Table table, String what, List<Double> ms) {
        List<Double> warm = ms.subList(1, ms.size());
        table.row(what, Math.round(ms.getFirst()) + " ms", warm.size(), Math.round(Stats.p50(warm)) + " ms",
                Math.round(Stats.min(warm)) + " ms", Math.round(Stats.max(warm)) + " ms");
    }
}
