package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/** Prints create, exec and destroy latencies; run with {@code -Dprocbox.latency=true -Dtest=ProcboxLatencyTest}. */
@EnabledIfSystemProperty(named = "procbox.latency", matches = "true")
class ProcboxLatencyTest {

    @TempDir
    Path tmp;

    @Test
    void measure() throws IOException {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
        Procbox unlimited = procbox(0, 0);
        Procbox defaults = Procbox.root();
        Procbox pooled = Procbox.pooled(tmp.resolve("templates"), 2, null);
        try {
            measure(unlimited, defaults, pooled);
        } finally {
            pooled.close();
        }
    }

    private void measure(Procbox unlimited, Procbox defaults, Procbox pooled) throws IOException {
        ExecRequest trueRequest = new ExecRequest(List.of("true"), 10, Map.of("PATH", "/usr/bin:/bin"), "/work", null,
                1000);
        double[] creates = new double[20];
        double[] destroys = new double[20];
        double[] bare = new double[20];
        for (int i = 0; i < bare.length; i++) {
            long start = System.nanoTime();
            ProcessRunner.run(List.of("/usr/bin/setsid", "/usr/bin/bwrap", "--unshare-all", "--ro-bind", "/", "/",
                    "--tmpfs", "/tmp", "--bind", tmp.toString(), "/work", "true"), Map.of(), null,
                    java.time.Duration.ofSeconds(10), 1000);
            bare[i] = millisSince(start);
        }
        System.out.printf("bare bwrap spawn (setsid bwrap --unshare-all ... true): %s%n", stats(bare));
        record Variant(String label, Procbox procbox, Integer memoryLimitMib) {
        }
        for (Variant variant : List.of(new Variant("no limits", unlimited, null),
                new Variant("pids limit only", procbox(ProcboxSettings.DEFAULT_PIDS_LIMIT, 0), null),
                new Variant("default pids + 1 GiB workspace", defaults, null),
                new Variant("defaults + memory limit", defaults, 256),
                new Variant("defaults, from the sandbox pool (full before each create)", pooled, null))) {
            Procbox procbox = variant.procbox();
            Integer limit = variant.memoryLimitMib();
            double[] exec = new double[100];
            for (int i = 0; i < creates.length; i++) {
                String id = "lat-" + i + "-" + variant.label().replaceAll("[^a-z0-9]", "");
                InstanceSpec spec = new InstanceSpec(id, Files.createDirectories(tmp.resolve("sandboxes").resolve(id)),
                        limit);
                if (procbox == pooled) {
                    // untimed: the pool refills between creates, as it does between a client's creates
                    pooled.runtime().pool().start(tmp);
                    while (pooled.runtime().pool().ready() < 2 && Sleep.briefly(5)) {
                        // waiting for the refill
                    }
                }
                long start = System.nanoTime();
                SandboxInstance instance = procbox.create(spec);
                creates[i] = millisSince(start);
                if (i == 0) {
                    for (int j = 0; j < 5; j++) {
                        instance.channel().exec(trueRequest);
                    }
                    for (int j = 0; j < exec.length; j++) {
                        start = System.nanoTime();
                        instance.channel().exec(trueRequest);
                        exec[j] = millisSince(start);
                    }
                }
                start = System.nanoTime();
                procbox.backend().destroy(spec, instance.state());
                destroys[i] = millisSince(start);
            }
            System.out.printf("procbox %s: create %s | exec true %s | destroy %s%n", variant.label(), stats(creates),
                    stats(exec), stats(destroys));
        }
    }

    private Procbox procbox(int pidsLimit, int diskLimitMib) {
        return new Procbox(new ProcboxSettings(Path.of("/usr/bin/bwrap"), 65534, 65534,
                ProcboxSettings.DEFAULT_CGROUP_ROOT, false, pidsLimit, diskLimitMib, tmp.resolve("templates")));
    }

    private static double millisSince(long start) {
        return (System.nanoTime() - start) / 1e6;
    }

    private static String stats(double[] samples) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        return String.format("p50 %.1f ms, p90 %.1f ms, min %.1f, max %.1f (n=%d)", sorted[sorted.length / 2],
                sorted[(int) (sorted.length * 0.9)], sorted[0], sorted[sorted.length - 1], sorted.length);
    }
}
