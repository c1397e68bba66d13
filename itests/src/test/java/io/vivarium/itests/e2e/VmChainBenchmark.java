package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmark (c) on real QEMU children, side by side in one run, state on a loop-mounted
 * XFS (reflink): a snapshot of a booted {@value #MEMORY_MIB} MiB VM, a chain of {@value #DEPTH}
 * branches of children on it ({@link VmChains}: RAM as page diffs, disk as qcow2 overlays), the top
 * compacted; then one child at a time forked from the depth-{@value #DEPTH} tag and from the
 * compacted tag, alternately ({@value #ROUNDS} each, the order swapped every round), each timed from
 * the fork request until it answered an exec, and deleted. The first fork of each is reported apart
 * (cold: the chain's links are verified once and remembered). Not part of {@code verify}:
 * {@code ./vivarium bench VmChainBenchmark}; results on stdout and in {@code target/bench/vm-chain.md}.
 */
class VmChainBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int MEMORY_MIB = 256;
    static final int DEPTH = 3;
    static final int ROUNDS = 6;

    @TempDir
    Path dir;

    @Test
    void spawnFromADepthThreeChainAgainstItsCompaction() throws Exception {
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
        double compactMs = (System.nanoTime() - c0) / 1e6;
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
        String report = String.join("\n",
                "| one " + MEMORY_MIB + " MiB QEMU child until it answered exec | cold (first) | n warm | warm p50 "
                        + "| warm min | warm max |",
                "|---|---|---|---|---|---|",
                row("from the depth-" + DEPTH + " chain (RAM materialised from its page diffs per child)", fromChain),
                row("from its compaction (RAM file mapped as it is)", fromFlat),
                "",
                String.format("chain / compacted: warm p50 **%.2f×** (goal ≤ 1.2×), cold %.2f×; compaction took %.0f ms",
                        ExecLatencyBenchmark.pct(warmChain, 50) / ExecLatencyBenchmark.pct(warmFlat, 50),
                        fromChain.getFirst() / fromFlat.getFirst(), compactMs),
                "",
                String.format("machine: nproc %d, kernel %s, load %s", Runtime.getRuntime().availableProcessors(),
                        System.getProperty("os.version"), Files.readString(Path.of("/proc/loadavg")).strip()),
                "");
        System.out.println(report);
        Path out = Files.createDirectories(Path.of("target", "bench"));
        Files.writeString(out.resolve("vm-chain.md"), report);
    }

    /** Milliseconds from the fork request until the child answered an exec; the child is deleted after. */
    private static double spawn(Api api, String tag) throws Exception {
        long t0 = System.nanoTime();
        String child = VmChains.fork(api, tag);
        try {
            api.exec(child, "true");
            return (System.nanoTime() - t0) / 1e6;
        } finally {
            api.delete("/v1/sandboxes/" + child);
        }
    }

    private static String row(String what, List<Double> ms) {
        List<Double> warm = ms.subList(1, ms.size());
        return String.format("| %s | %.0f ms | %d | %.0f ms | %.0f ms | %.0f ms |", what, ms.getFirst(), warm.size(),
                ExecLatencyBenchmark.pct(warm, 50), Collections.min(warm),
                Collections.max(warm));
    }
}
