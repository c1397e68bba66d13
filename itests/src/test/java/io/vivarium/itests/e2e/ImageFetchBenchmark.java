package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.PostgresCluster;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24's second figure: 30 children of one tag forked across three nodes, ten on each, where
 * the tag's image holds 1 GiB of random data (a procbox workspace image) on n1 and n2 and n3 must
 * fetch it first, each from n1 over HTTPS in its network namespace. The fetch's rate (the image's
 * bytes over the time from the holder's ticket to the copy published, as the master's
 * {@code vivarium_image_fetch_seconds} times it) is compared with a local copy of the same file
 * on n1's disk ({@code cp -a --sparse=always}, how a fork copies a workspace image here, then
 * {@code sync --data} of the copy: a fetched copy is on the disk, {@code fdatasync}, before it is
 * published), the median of three. The nodes that fetch fork first, and every step starts after a {@code sync} and
 * with the page cache dropped, so that each reads from the disk and no step pays for the writes
 * an earlier one left. Then the same three forks again: the second round
 * fetches nothing.
 */
@ExtendWith(Bench.class)
class ImageFetchBenchmark {
    static final Goal FETCH = Goal.atLeast("fetch of a 1 GiB image from another node / a local copy of it, rate", 0.5, "×", 24);
    static final Goal SECOND = Goal.exactly("images fetched by a second fork of the same tag on the same nodes", 0, "", 24);

    static final int CHILDREN_PER_NODE = 10;
    static final int LOCAL_COPIES = 3;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void forkAcrossThreeNodesWhereTwoFetchTheImage(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(PostgresCluster.binaries().isPresent(), "needs PostgreSQL's server binaries (apt-get install postgresql)");
        List<NetNamespace> namespaces = new ArrayList<>();
        try (PostgresCluster cluster = PostgresCluster.start(true)) {
            Daemon master = daemons.start(dir.resolve("master"), List.of("--features",
                    "core,api-v1,procbox,fingerprint-sha256,storage-reflink,metrics,state-postgres,fleet", "--state-url", cluster.url(),
                    "--host", "0.0.0.0"));
            Api api = new Api(master.baseUrl(), master.adminToken());
            List<Daemon> nodes = new ArrayList<>();
            for (int n = 1; n <= 3; n++) {
                NetNamespace ns = NetNamespace.create(n);
                namespaces.add(ns);
                Daemon node = daemons.startNode(dir.resolve("n" + n), ns, "n" + n,
                        List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
                nodes.add(node);
                Api.expect(201, api.post("/v1/nodes", Map.of("address", node.address(), "pairing_code", node.pairingCode(),
                        "node_id", "n" + n)));
            }
            try {
                measure(report, api, nodes.get(0));
            } finally {
                api.deleteAllSandboxes();
                api.delete("/v1/snapshots/bench-gib");
            }
        } finally {
            for (NetNamespace ns : namespaces) {
                ns.close();
            }
        }
    }

    private static void measure(BenchReport report, Api api, Daemon holder) throws Exception {
        for (String node : List.of("n1", "n2", "n3")) { // the same warm-up on each node: its first create starts its pools
            String warm = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", node, "disk_limit_mib", 1200))).get("id").asText();
            Api.expect(204, api.delete("/v1/sandboxes/" + warm));
        }
        String parent = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", "n1", "disk_limit_mib", 1200))).get("id").asText();
        Api.sh(api, parent, "head -c 1G /dev/urandom > /work/big && sync");
        Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "bench-gib")));
        Path image = imageFile(holder.stateDir(), "bench-gib");
        long bytes = Files.size(image);

        List<Double> copies = new ArrayList<>();
        for (int i = 0; i < LOCAL_COPIES; i++) {
            Path copy = holder.stateDir().resolve("bench-copy-" + i);
            sync();
            long t0 = System.nanoTime();
            Process cp = new ProcessBuilder("sh", "-c", "cp -a --sparse=always --reflink=never \"$1\" \"$2\" && sync --data \"$2\"",
                    "sh", image.toString(), copy.toString()).inheritIO().start();
            if (Bounded.waitFor(cp, Duration.ofMinutes(10), "cp of the image") != 0) {
                throw new AssertionError("cp (and sync) of the image failed");
            }
            copies.add(Stats.millisSince(t0));
            Files.delete(copy);
        }
        double copyMillis = Stats.p50(copies);

        Table table = new Table("fork of " + CHILDREN_PER_NODE + " children of a tag holding 1 GiB of data",
                "fork ms", "fetch (or copy) ms", "MiB/s");
        List<Double> fetchMillis = new ArrayList<>();
        double fetchesBefore = 0;
        for (int round = 1; round <= 2; round++) {
            fetchesBefore = round == 2 ? metric(api, "vivarium_image_fetches_total{outcome=\"ok\"}") : 0;
            for (String node : List.of("n2", "n3", "n1")) {
                sync();
                double sumBefore = metric(api, "vivarium_image_fetch_seconds_sum");
                long t0 = System.nanoTime();
                Api.expect(201, api.post("/v1/sandboxes", Map.of("snapshot_tag", "bench-gib", "n", CHILDREN_PER_NODE, "node_id", node)));
                double fork = Stats.millisSince(t0);
                double fetch = (metric(api, "vivarium_image_fetch_seconds_sum") - sumBefore) * 1000;
                if (round == 1 && fetch > 0) {
                    fetchMillis.add(fetch);
                }
                table.row("round " + round + ", on " + node, fork, fetch == 0 ? "none" : fetch,
                        fetch == 0 ? "" : bytes / 1048576.0 / (fetch / 1000));
            }
        }
        double secondRoundFetches = metric(api, "vivarium_image_fetches_total{outcome=\"ok\"}") - fetchesBefore;
        table.row("local copy of the image file (`cp -a --sparse=always`, then `sync --data` of the copy), median of "
                + LOCAL_COPIES, "", copyMillis,
                bytes / 1048576.0 / (copyMillis / 1000));
        report.add(table);
        report.add("image file " + bytes / 1048576 + " MiB apparent, 1024 MiB of it data; fetches in round 1: " + fetchMillis.size());
        if (fetchMillis.size() != 2) {
            throw new AssertionError("n2 and n3 each fetch the image once in round 1, measured " + fetchMillis);
        }
        report.check(FETCH, copyMillis / Stats.max(fetchMillis));
        report.check(SECOND, secondRoundFetches);
    }

    /**
     * Writes back what earlier steps left dirty and drops the clean page cache, so that every step
     * starts alike: reading from the disk, writing without reclaiming another step's pages.
     */
    private static void sync() throws Exception {
        if (Bounded.waitFor(new ProcessBuilder("sync").inheritIO().start(), Duration.ofMinutes(10), "sync") != 0) {
            throw new AssertionError("sync failed");
        }
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "1\n");
    }

    /** The one file of a tag's image on a node (a procbox workspace image). */
    private static Path imageFile(Path stateDir, String tag) throws Exception {
        try (Stream<Path> walk = Files.walk(stateDir.resolve("snapshots"))) {
            return walk.filter(p -> p.getParent().getFileName().toString().equals("image")
                    && p.getParent().getParent().getFileName().toString().equals(tag) && Files.isRegularFile(p))
                    .findFirst().orElseThrow(() -> new AssertionError("no image file of " + tag + " under " + stateDir));
        }
    }

    private static double metric(Api api, String series) throws Exception {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(api.get("/metrics").raw().body());
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
}
