package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Table;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmark (d), side by side in one run: forks of procbox children from a tag whose
 * workspace holds 1 GiB of random data, with the daemon's state directory on a loop-mounted XFS
 * with reflink (children's workspaces are clones) and on the host's ext4 (full copies).
 * {@value #XFS_CHILDREN} children on XFS; on ext4 {@value #EXT4_CHILDREN}, since 100 full copies
 * would write 100 GiB.
 */
@ExtendWith(Bench.class)
class ForkBenchmark {
    static final Goal XFS_FORK = Goal.atMost("fork of 100 procbox children from a tag with a 1 GiB workspace, on XFS", 2000,
            "ms", 10);

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
    void forksFromATagWithA1GiBWorkspaceOnXfsAndExt4(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Run xfs = measure("xfs (reflink=1, loop)", daemons.xfsStateDir(dir, 16L << 30), XFS_CHILDREN);
        Run ext4 = measure("ext4", dir.resolve("state-ext4"), EXT4_CHILDREN);

        Table table = new Table("state on", "children", "fork (one request)", "per child", "build (1 GiB written)", "mode",
                "image on disk");
        for (Run r : List.of(xfs, ext4)) {
            table.row(r.fs(), r.children(), r.forkMillis() + " ms", String.format("%.1f ms", (double) r.forkMillis() / r.children()),
                    r.buildMillis() + " ms", r.mode(), (r.physicalBytes() >> 20) + " MiB");
        }
        report.add(table);
        report.check(XFS_FORK, xfs.forkMillis());
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
}
