package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmarks (a) and (b), side by side in one run, state on a loop-mounted XFS (reflink):
 * (a) {@value #CHILDREN} QEMU children forked from a tag (one request) until each answered an exec,
 * against {@value #CHILDREN} cold boots made as the fork makes children ({@value #PARALLEL} at a
 * time), with the host memory each set adds: the sum of the QEMU processes' PSS (a page shared by
 * k processes counts 1/k to each, so the sum counts the snapshot's shared RAM pages once) and
 * their private bytes (pages only that process holds); (b) the pause of a branch of a running
 * 256 MiB VM (a booted one, whose RAM file is shared: x-ignore-shared + reflink) and of a forked
 * child (dirty pages from pagemap). Not part of {@code verify}: {@code ./vivarium bench
 * VmForkBenchmark}; results on stdout and in {@code target/bench/vm-fork.md}.
 */
class VmForkBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int CHILDREN = 10;
    static final int PARALLEL = 4;
    static final int MEMORY_MIB = 256;
    static final int BRANCHES = 5;

    @TempDir
    Path dir;

    @Test
    void forkTenAgainstTenColdBootsAndBranchPauses() throws Exception {
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

        long f0 = System.nanoTime();
        Api.Response forked = api.post("/v1/sandboxes", Map.of("snapshot_tag", "bench", "n", CHILDREN));
        if (forked.status() != 201) {
            throw new AssertionError("fork failed: " + forked.body());
        }
        List<String> children = new ArrayList<>();
        forked.body().forEach(sb -> children.add(sb.get("id").asText()));
        for (String id : children) {
            api.exec(id, "true");
        }
        double forkMs = (System.nanoTime() - f0) / 1e6;
        long[] childMemory = memory(api, children);

        long c0 = System.nanoTime();
        List<String> cold = coldBoots(api);
        for (String id : cold) {
            api.exec(id, "true");
        }
        double coldMs = (System.nanoTime() - c0) / 1e6;
        long[] coldMemory = memory(api, cold);

        List<Double> bootedPauses = new ArrayList<>();
        String booted = cold.get(0);
        for (int i = 0; i < BRANCHES; i++) {
            bootedPauses.add(branchPause(api, booted, "booted-" + i));
        }
        List<Double> childPauses = new ArrayList<>();
        String child = children.get(0);
        Api.sh(api, child, "head -c 16777216 /dev/urandom > /tmp/dirty");
        for (int i = 0; i < BRANCHES; i++) {
            childPauses.add(branchPause(api, child, "child-" + i));
        }
        for (String id : children) {
            api.delete("/v1/sandboxes/" + id);
        }
        for (String id : cold) {
            api.delete("/v1/sandboxes/" + id);
        }

        long guest = (long) MEMORY_MIB << 20;
        String report = String.join("\n",
                "| " + CHILDREN + " QEMU VMs of " + MEMORY_MIB + " MiB until each answered exec | wall | sum of PSS "
                        + "| PSS per VM | private per VM | RSS per VM |",
                "|---|---|---|---|---|---|",
                String.format("| fork of %d from a tag (one request) | %.0f ms | %d MiB | %d MiB (%.0f%% of guest RAM) "
                        + "| %d MiB | %d MiB |", CHILDREN, forkMs, childMemory[0] >> 20, childMemory[0] / CHILDREN >> 20,
                        100.0 * childMemory[0] / CHILDREN / guest, childMemory[1] / CHILDREN >> 20,
                        childMemory[2] / CHILDREN >> 20),
                String.format("| %d cold boots, %d at a time | %.0f ms | %d MiB | %d MiB | %d MiB | %d MiB |", CHILDREN,
                        PARALLEL, coldMs, coldMemory[0] >> 20, coldMemory[0] / CHILDREN >> 20,
                        coldMemory[1] / CHILDREN >> 20, coldMemory[2] / CHILDREN >> 20),
                "",
                String.format("cold / fork = **%.1f×**", coldMs / forkMs),
                "",
                "| branch of a running " + MEMORY_MIB + " MiB VM: pause_ms | n | p50 | max |",
                "|---|---|---|---|",
                String.format("| booted VM (RAM file share=on: device state with x-ignore-shared + reflink of the RAM) "
                        + "| %d | %.0f | %.0f |", BRANCHES, ExecLatencyBenchmark.pct(bootedPauses, 50),
                        ExecLatencyBenchmark.pct(bootedPauses, 100)),
                String.format("| forked child (share=off: device state alone + its dirty pages from pagemap) | %d | %.0f "
                        + "| %.0f |", BRANCHES, ExecLatencyBenchmark.pct(childPauses, 50),
                        ExecLatencyBenchmark.pct(childPauses, 100)),
                "",
                String.format("machine: nproc %d, kernel %s, load %s", Runtime.getRuntime().availableProcessors(),
                        System.getProperty("os.version"), Files.readString(Path.of("/proc/loadavg")).strip()),
                "");
        System.out.println(report);
        Path out = Files.createDirectories(Path.of("target", "bench"));
        Files.writeString(out.resolve("vm-fork.md"), report);
    }

    private static List<String> coldBoots(Api api) throws Exception {
        ConcurrentLinkedQueue<String> ids = new ConcurrentLinkedQueue<>();
        ExecutorService pool = Executors.newFixedThreadPool(PARALLEL);
        try {
            List<Future<?>> boots = new ArrayList<>();
            for (int i = 0; i < CHILDREN; i++) {
                boots.add(pool.submit(() -> {
                    ids.add(api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", MEMORY_MIB)));
                    return null;
                }));
            }
            for (Future<?> boot : boots) {
                Bounded.get(boot, Duration.ofMinutes(5), "a VM's create");
            }
        } finally {
            pool.shutdownNow();
        }
        return new ArrayList<>(ids);
    }

    private static double branchPause(Api api, String id, String tag) throws Exception {
        Api.Response r = api.post("/v1/sandboxes/" + id + "/branch", Map.of("tag", tag));
        if (r.status() != 201) {
            throw new AssertionError("branch failed: " + r.body());
        }
        return r.body().get("pause_ms").asDouble();
    }

    /** Sum over the VMs' QEMU processes of PSS, private bytes and RSS ({@code /proc/PID/smaps_rollup}). */
    private static long[] memory(Api api, List<String> ids) throws Exception {
        long[] sum = new long[3];
        for (String id : ids) {
            JsonNode sb = api.get("/v1/sandboxes/" + id).body();
            long pid = sb.get("pid").asLong();
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps_rollup"))) {
                String[] f = line.split("\\s+");
                long bytes = f.length > 1 && f[1].matches("[0-9]+") ? Long.parseLong(f[1]) << 10 : 0;
                switch (f[0]) {
                    case "Pss:" -> sum[0] += bytes;
                    case "Private_Clean:", "Private_Dirty:" -> sum[1] += bytes;
                    case "Rss:" -> sum[2] += bytes;
                    default -> { }
                }
            }
        }
        return sum;
    }
}
