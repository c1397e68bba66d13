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
        ProcboxBackend backend = ProcboxSandboxTest.rootBackend();
        ExecRequest trueRequest = new ExecRequest(List.of("true"), 10, Map.of("PATH", "/usr/bin:/bin"), "/work", null,
                1000);
        double[] creates = new double[20];
        double[] destroys = new double[20];
        for (Integer limit : new Integer[] {null, 256}) {
            double[] exec = new double[100];
            for (int i = 0; i < creates.length; i++) {
                String id = "lat-" + i + (limit == null ? "" : "-m");
                InstanceSpec spec = new InstanceSpec(id, Files.createDirectory(tmp.resolve(id)), limit);
                long start = System.nanoTime();
                SandboxInstance instance = backend.create(spec);
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
                backend.destroy(spec, instance.state());
                destroys[i] = millisSince(start);
            }
            String label = limit == null ? "no limit" : "memory limit";
            System.out.printf("procbox %s: create %s | exec true %s | destroy %s%n", label, stats(creates),
                    stats(exec), stats(destroys));
        }
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
