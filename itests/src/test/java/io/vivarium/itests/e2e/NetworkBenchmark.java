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
 * figure is the difference of the p50s. Where gVisor runs, the same for gVisor creates, after the
 * procbox rounds ({@value #GVISOR_ROUNDS} of each after {@value #WARM_UP}): reported beside, with no
 * goal of its own (issue 25 names procbox's).
 */
@ExtendWith(Bench.class)
class NetworkBenchmark {
    static final Goal ADDED = Goal.atMost("what the egress network adds to a procbox create, p50", 20, "ms", 25);
    static final int ROUNDS = 40;
    static final int WARM_UP = 5;
    static final int GVISOR_ROUNDS = 20;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void createWithEgressAgainstNone(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(java.nio.file.Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft");
        boolean gvisor = Host.gvisorMissing() == null;
        Daemon daemon = daemons.start(dir.resolve("state"), gvisor ? List.of("--features",
                "core,api-v1,procbox,gvisor,fingerprint-sha256,storage-reflink") : List.of(),
                List.of("-Dvivarium.network.allow=198.51.100.0/24", "-Dvivarium.default.backend=procbox"));
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
        if (gvisor) {
            List<Double> gvisorEgress = new ArrayList<>();
            List<Double> gvisorNone = new ArrayList<>();
            Map<String, Object> gEgress = Map.of("backend", "gvisor", "network", egress.get("network"));
            for (int i = 0; i < WARM_UP + GVISOR_ROUNDS; i++) {
                double e = timedCreate(api, gEgress);
                double n = timedCreate(api, Map.of("backend", "gvisor"));
                if (i >= WARM_UP) {
                    gvisorEgress.add(e);
                    gvisorNone.add(n);
                }
            }
            report.add(Table.latencies().latency("gVisor create with network egress", gvisorEgress)
                    .latency("gVisor create with network none", gvisorNone));
            report.add(String.format(java.util.Locale.ROOT, "what the egress network adds to a gVisor create, p50: %.1f ms "
                    + "(a named namespace, the same attach as procbox's, runsc's network stack; no goal of its own)",
                    Stats.p50(gvisorEgress) - Stats.p50(gvisorNone)));
        } else {
            report.add("gVisor not measured: " + Host.gvisorMissing());
        }
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
