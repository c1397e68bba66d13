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
 * Issue 25's first figure: what the {@code egress} network adds to a procbox create. Creates of
 * the default spec (so both may take a sandbox of the pool) alternate one by one, {@value #ROUNDS}
 * of each after {@value #WARM_UP} of each untimed, each sandbox deleted outside the timed call; the
 * figure is the difference of the p50s.
 */
@ExtendWith(Bench.class)
class NetworkBenchmark {
    static final Goal ADDED = Goal.atMost("what the egress network adds to a procbox create, p50", 20, "ms", 25);
    static final int ROUNDS = 40;
    static final int WARM_UP = 5;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void createWithEgressAgainstNone(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(java.nio.file.Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of(), List.of("-Dvivarium.network.allow=198.51.100.0/24"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Map<String, Object> egress = Map.of("network", Map.of("mode", "egress", "allow", List.of("198.51.100.0/24")));
        List<Double> withEgress = new ArrayList<>();
        List<Double> without = new ArrayList<>();
        for (int i = 0; i < WARM_UP + ROUNDS; i++) {
            double e = timedCreate(api, egress);
            double n = timedCreate(api, Map.of());
            if (i >= WARM_UP) {
                withEgress.add(e);
                without.add(n);
            }
        }
        report.add(Table.latencies().latency("create with network egress", withEgress)
                .latency("create with network none (loopback only)", without));
        report.check(ADDED, Stats.p50(withEgress) - Stats.p50(without));
    }

    /** Milliseconds of one create; the sandbox is deleted after the clock stopped. */
    private static double timedCreate(Api api, Map<String, Object> body) throws Exception {
        long start = System.nanoTime();
        String id = api.createSandbox(body);
        double ms = (System.nanoTime() - start) / 1e6;
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        return ms;
    }
}
