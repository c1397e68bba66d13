package io.vivarium.itests.e2e;

import static io.vivarium.itests.bench.Stats.p50;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run, on the same trees: a sha256 baseline through the daemon against
 * {@code find DIR -xdev -type f -print0 | xargs -0 sha256sum} on (a) 10,000 small files and (b) one
 * 1 GiB file; (c) a stat-mode baseline of 200,000 files; (d) dry-run overhead of a no-op on the
 * 10,000-file + 1 GiB workspace against a full copy of it, made durable (every file and directory
 * of the copy fsynced) as a copy that protects a workspace must be. Rounds alternate between the
 * contenders and run warm (page cache filled first); every contender gets the same untimed round first.
 */
@ExtendWith(Bench.class)
class ChangeSetBenchmark {
    static final Goal SHA_SMALL = Goal.atMost("sha256 baseline via HTTP / `find | xargs sha256sum`, 10,000 × 4 KiB files",
            0.7, "×", 3);
    static final Goal SHA_BIG = Goal.atMost("sha256 baseline via HTTP / `find | xargs sha256sum`, one 1 GiB file", 1, "×", 3);
    static final Goal DRY_RUN_OVERHEAD = Goal.below("dry-run overhead of a no-op (overlay), 10,000 files + 1 GiB", 100, "ms",
            3);
    static final Goal COPY_VS_DRY_RUN = Goal.atLeast("full copy of that workspace (fsynced) / dry-run overhead", 20, "×", 3);
    static final Goal STAT = Goal.below("stat baseline via HTTP, 200,000 files", 2000, "ms", 3);

    /** The workspace image size for these trees (procbox's default of 1 GiB holds neither). */
    private static final int WORKSPACE_MIB = 4096;
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 5;
    /** The hashing comparisons are short and noisy here: more rounds for a stable median. */
    static final int HASH_ROUNDS = 11;

    @TempDir
    Path dir;

    @Test
    void baselinesAndDryRun(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Table table = new Table("measurement", "n", "p50 ms", "min ms");
        {
            Daemon daemon = daemons.start(dir.resolve("sha"), List.of());
            Api api = new Api(daemon.baseUrl(), daemon.adminToken());
            // 1 GiB of test data does not fit the default 1 GiB workspace image, nor does the dry-run's copy
            String id = api.createSandbox(Map.of("disk_limit_mib", WORKSPACE_MIB));
            Path sandboxDir = daemon.stateDir().resolve("sandboxes").resolve(id);
            Path work = api.procboxWorkspace(id);
            smallFiles(work.resolve("small"), 10_000, 4096);
            bigFile(work.resolve("big").resolve("one.bin"), 1L << 30);

            for (String tree : List.of("small", "big")) {
                List<Double> ours = new ArrayList<>();
                List<Double> coreutils = new ArrayList<>();
                timeBaseline(api, id, sandboxDir, "/work/" + tree);
                coreutils(work.resolve(tree));
                for (int i = 0; i < HASH_ROUNDS; i++) {
                    ours.add(timeBaseline(api, id, sandboxDir, "/work/" + tree));
                    coreutils.add(coreutils(work.resolve(tree)));
                }
                String what = tree.equals("small") ? "10,000 × 4 KiB files" : "one 1 GiB file";
                row(table, "sha256 baseline via HTTP, " + what, ours);
                row(table, "`find -xdev -type f -print0 | xargs -0 sha256sum`, " + what, coreutils);
                report.check(tree.equals("small") ? SHA_SMALL : SHA_BIG, p50(ours) / p50(coreutils));
            }

            List<Double> exec = new ArrayList<>();
            List<Double> dryRun = new ArrayList<>();
            List<Double> copy = new ArrayList<>();
            for (int i = 0; i < ROUNDS + 1; i++) {
                long t0 = System.nanoTime();
                JsonNode ran = api.exec(id, "true");
                double e = Stats.millisSince(t0);
                if (ran.get("exit_code").asInt() != 0) {
                    throw new AssertionError("exec failed: " + ran);
                }
                t0 = System.nanoTime();
                Api.Response r = api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "true", "paths", List.of("/work")));
                double d = Stats.millisSince(t0);
                if (r.status() != 200 || !"overlay".equals(r.body().get("reverted_via").asText())) {
                    throw new AssertionError("dry-run failed: " + r.raw().body());
                }
                double c = fullCopy(work, dir.resolve("copy"));
                if (i > 0) {
                    exec.add(e);
                    dryRun.add(d);
                    copy.add(c);
                }
            }
            List<Double> overhead = new ArrayList<>();
            for (int i = 0; i < dryRun.size(); i++) {
                overhead.add(dryRun.get(i) - exec.get(i));
            }
            row(table, "exec `true` via HTTP (the command alone)", exec);
            row(table, "dry-run `true` via HTTP, overlay, 10,000 files + 1 GiB", dryRun);
            row(table, "dry-run overhead (dry-run − exec, same round)", overhead);
            row(table, "full copy of that workspace (`cp -a`, every file and directory fsynced, `rm -rf`)", copy);
            report.check(DRY_RUN_OVERHEAD, p50(overhead));
            report.check(COPY_VS_DRY_RUN, p50(copy) / p50(overhead));
            api.delete("/v1/sandboxes/" + id);
            daemon.cleanUp();
        }

        {
            Daemon daemon = daemons.start(dir.resolve("stat"), List.of("--features",
                "core,api-v1,procbox,fingerprint-stat"));
            Api api = new Api(daemon.baseUrl(), daemon.adminToken());
            // 200,000 files need more inodes than the default 1 GiB workspace image has (one per 16 KiB)
            String id = api.createSandbox(Map.of("disk_limit_mib", WORKSPACE_MIB));
            Path sandboxDir = daemon.stateDir().resolve("sandboxes").resolve(id);
            smallFiles(api.procboxWorkspace(id).resolve("many"), 200_000, 0);
            List<Double> stat = new ArrayList<>();
            timeBaseline(api, id, sandboxDir, "/work/many");
            for (int i = 0; i < ROUNDS; i++) {
                stat.add(timeBaseline(api, id, sandboxDir, "/work/many"));
            }
            row(table, "stat baseline via HTTP, 200,000 files", stat);
            report.check(STAT, p50(stat));
            api.delete("/v1/sandboxes/" + id);
            daemon.cleanUp();
        }
        report.add(table);
    }

    /** A baseline from scratch: the previous one is removed so no fingerprint is reused. */
    private static double timeBaseline(Api api, String id, Path sandboxDir, String path) throws Exception {
        Files.deleteIfExists(sandboxDir.resolve("baseline.json"));
        long t0 = System.nanoTime();
        Api.Response r = api.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of(path)));
        double ms = Stats.millisSince(t0);
        if (r.status() != 200) {
            throw new AssertionError("baseline failed: " + r.raw().body());
        }
        return ms;
    }

    private static double coreutils(Path tree) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder("sh", "-c", "find \"$1\" -xdev -type f -print0 | xargs -0 sha256sum > /dev/null", "sh",
                tree.toString()).inheritIO().start();
        if (Bounded.waitFor(p, Duration.ofMinutes(10), "the coreutils pipeline") != 0) {
            throw new IllegalStateException("coreutils pipeline failed");
        }
        return Stats.millisSince(t0);
    }

    /** A copy of the workspace as a copy method makes it: every file and directory of the copy fsynced, then removed. */
    private static double fullCopy(Path work, Path copy) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder("sh", "-c", "cp -a --reflink=auto \"$1/.\" \"$2/\" && find \"$2\" -exec sync -- {} + && rm -rf \"$2\"", "sh",
                work.toString(), copy.toString()).inheritIO().start();
        if (Bounded.waitFor(p, Duration.ofMinutes(10), "the full copy") != 0) {
            throw new IllegalStateException("copy failed");
        }
        return Stats.millisSince(t0);
    }

    private static void smallFiles(Path root, int count, int size) throws IOException {
        byte[] content = new byte[size];
        new java.util.Random(42).nextBytes(content);
        for (int i = 0; i < count; i++) {
            Path d = Files.createDirectories(root.resolve("d" + (i / 1000)));
            if (size > 0) {
                content[0] = (byte) i;
            }
            Files.write(d.resolve("f" + i), content);
        }
    }

    private static void bigFile(Path file, long size) throws IOException {
        Files.createDirectories(file.getParent());
        byte[] block = new byte[1 << 20];
        new java.util.Random(7).nextBytes(block);
        try (OutputStream out = Files.newOutputStream(file)) {
            for (long written = 0; written < size; written += block.length) {
                out.write(block);
            }
        }
    }

    private static void row(Table table, String what, List<Double> ms) {
        table.row(what, ms.size(), p50(ms), Stats.min(ms));
    }
}
