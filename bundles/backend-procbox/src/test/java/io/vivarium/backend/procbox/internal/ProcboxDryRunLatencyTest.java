package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;
import io.vivarium.testkit.Bounded;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prints what a dry-run of {@code true} costs over an exec of it, on an overlay and on a copy of a
 * workspace of 10,000 small files and one 1 GiB file; run with
 * {@code -Dprocbox.dryrun.bench=true -Dtest=ProcboxDryRunLatencyTest}.
 */
@EnabledIfSystemProperty(named = "procbox.dryrun.bench", matches = "true")
class ProcboxDryRunLatencyTest {

    private static final int RUNS = 10;
    private static final ExecRequest TRUE = new ExecRequest(List.of("sh", "-c", "true"), 30,
            Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1000);

    @TempDir
    Path tmp;

    @Test
    void measure() throws Exception {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
        Procbox overlay = Procbox.root();
        Procbox copy = new Procbox(new ProcboxRuntime(Procbox.rootSettings(false), false));
        InstanceSpec spec = new InstanceSpec("bench", Files.createDirectory(tmp.resolve("bench")), null);
        SandboxInstance instance = overlay.create(spec);
        try {
            populate(SandboxMounts.workspace(((ProcboxInstance) instance).sandbox().init()));
            double[] exec = new double[RUNS];
            for (int i = -2; i < RUNS; i++) {
                long start = System.nanoTime();
                instance.channel().exec(TRUE);
                record(exec, i, start);
            }
            double[] overlays = dryRuns(overlay, instance, "overlay");
            double[] copies = dryRuns(copy, instance, "workspace-copy");

            double execP50 = p50(exec);
            double overlayOverhead = p50(overlays) - execP50;
            double copyOverhead = p50(copies) - execP50;
            System.out.printf("procbox dry-run of true, 10,000 files + 1 GiB, p50 of %d: exec %.1f ms | overlay %.1f ms"
                    + " (%s) | workspace-copy %.1f ms (%s) | overhead overlay %.1f ms, copy %.1f ms, ratio %.0fx%n",
                    RUNS, execP50, p50(overlays), range(overlays), p50(copies), range(copies), overlayOverhead,
                    copyOverhead, copyOverhead / overlayOverhead);
            assertTrue(overlayOverhead < 100, "overlay overhead " + overlayOverhead + " ms");
            assertTrue(copyOverhead >= 20 * overlayOverhead, "copy " + copyOverhead + " ms, overlay " + overlayOverhead);
        } finally {
            overlay.backend().destroy(spec, instance.state());
            overlay.close();
            copy.close();
        }
    }

    private static double[] dryRuns(Procbox procbox, SandboxInstance instance, String mechanism) {
        double[] samples = new double[RUNS];
        for (int i = -2; i < RUNS; i++) {
            long start = System.nanoTime();
            ScratchRun run = procbox.scratchRuns().run(instance, TRUE);
            run.close();
            record(samples, i, start);
            assertEquals(mechanism, run.mechanism());
            assertEquals(0, run.result().exitCode());
        }
        return samples;
    }

    /** Negative rounds warm up. */
    private static void record(double[] samples, int round, long start) {
        if (round >= 0) {
            samples[round] = (System.nanoTime() - start) / 1e6;
        }
    }

    private static void populate(Path work) throws IOException, InterruptedException {
        byte[] content = new byte[4096];
        Arrays.fill(content, (byte) 'x');
        for (int dir = 0; dir < 100; dir++) {
            Path d = Files.createDirectory(work.resolve("d" + dir));
            for (int file = 0; file < 100; file++) {
                Files.write(d.resolve("f" + file), content);
            }
        }
        run("dd", "if=/dev/zero", "of=" + work.resolve("big"), "bs=1M", "count=1024", "status=none");
        run("chown", "-R", "65534:65534", work.toString());
        run("sync");
    }

    private static void run(String... argv) throws IOException, InterruptedException {
        assertEquals(0, Bounded.waitFor(new ProcessBuilder(argv).inheritIO().start(), Duration.ofMinutes(5), String.join(" ", argv)),
                String.join(" ", argv));
    }

    private static double p50(double[] samples) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static String range(double[] samples) {
        return String.format("min %.1f, max %.1f", Arrays.stream(samples).min().orElseThrow(),
                Arrays.stream(samples).max().orElseThrow());
    }
}
