package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmark (d), side by side in one run: forks of procbox children from a tag whose
 * workspace holds 1 GiB of random data, with the daemon's state directory on a loop-mounted XFS
 * image with reflink (children's workspaces are clones) and on the host's ext4 (full copies).
 * {@value #XFS_CHILDREN} children on XFS; on ext4 {@value #EXT4_CHILDREN}, since 100 full copies
 * would write 100 GiB. Not part of {@code verify}: {@code ./vivarium bench ForkBenchmark}.
 * Results go to stdout and {@code target/bench/fork.md}.
 */
class ForkBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int XFS_CHILDREN = 100;
    static final int EXT4_CHILDREN = 10;
    static final String FILL = "head -c 1073741824 /dev/urandom > /work/data && sync";

    @TempDir
    Path dir;

    record Run(String fs, int children, long forkMillis, long buildMillis, String mode, long physicalBytes) {
    }

    @Test
    void forksFromATagWithA1GiBWorkspaceOnXfsAndExt4() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/mkfs.xfs")) || Files.isExecutable(Path.of("/sbin/mkfs.xfs")),
                "mkfs.xfs is missing: apt-get install xfsprogs");
        List<Run> runs = new ArrayList<>();
        Path image = dir.resolve("xfs.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(16L << 30);
        }
        run("mkfs.xfs", "-q", "-m", "reflink=1", image.toString());
        Path xfs = Files.createDirectories(dir.resolve("xfs"));
        run("mount", "-o", "loop", image.toString(), xfs.toString());
        try {
            runs.add(measure("xfs (reflink=1, loop)", xfs.resolve("state"), XFS_CHILDREN));
        } finally {
            run("umount", "-l", xfs.toString());
        }
        runs.add(measure("ext4", dir.resolve("state-ext4"), EXT4_CHILDREN));

        StringBuilder report = new StringBuilder("| state on | children | fork (one request) | per child | build (1 GiB written) "
                + "| mode | image on disk |\n|---|---|---|---|---|---|---|\n");
        for (Run r : runs) {
            report.append(String.format("| %s | %d | %d ms | %.1f ms | %d ms | %s | %d MiB |%n", r.fs(), r.children(),
                    r.forkMillis(), (double) r.forkMillis() / r.children(), r.buildMillis(), r.mode(),
                    r.physicalBytes() >> 20));
        }
        report.append("\nmachine: ").append(Runtime.getRuntime().availableProcessors()).append(" CPUs, kernel ")
                .append(System.getProperty("os.version")).append('\n');
        System.out.println(report);
        Path out = Files.createDirectories(Path.of("target", "bench"));
        Files.writeString(out.resolve("fork.md"), report);
    }

    private Run measure(String fs, Path state, int children) throws Exception {
        Daemon daemon = daemons.start(state, List.of());
        try {
            Api api = new Api(daemon.baseUrl(), daemon.adminToken());
            long b0 = System.nanoTime();
            Api.Response built = api.post("/v1/snapshots", Map.of("tag", "big", "disk_limit_mib", 2048,
                    "setup", List.of("sh", "-c", FILL)));
            long buildMillis = (System.nanoTime() - b0) / 1_000_000;
            assertEquals(201, built.status(), String.valueOf(built.body()));
            long f0 = System.nanoTime();
            Api.Response forked = api.post("/v1/sandboxes", Map.of("snapshot_tag", "big", "n", children));
            long forkMillis = (System.nanoTime() - f0) / 1_000_000;
            assertEquals(201, forked.status(), String.valueOf(forked.body()));
            JsonNode first = forked.body().get(0);
            assertEquals("1073741824\n", Api.sh(api, first.get("id").asText(), "stat -c %s /work/data"));
            String record = Files.readString(state.resolve("snapshot-records/7-default.big.json"));
            String mode = record.contains("\"mode\" : \"reflink\"") ? "reflink" : "copy";
            long physical = api.get("/v1/snapshots/big/info").body().get("physical_bytes").asLong();
            api.deleteAllSandboxes();
            return new Run(fs, children, forkMillis, buildMillis, mode, physical);
        } finally {
            daemon.cleanUp();
        }
    }

    private static void run(String... argv) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).inheritIO().start();
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", argv) + " failed");
        }
    }
}
