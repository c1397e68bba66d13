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
 * figure is the difference of the p50s. Where gVisor and QEMU run, the same for their creates, after
 * the procbox rounds ({@value #GVISOR_ROUNDS} and {@value #QEMU_ROUNDS} of each after
 * {@value #WARM_UP}): reported beside, with no goal of their own (issue 25 names procbox's).
 */
@ExtendWith(Bench.class)
class NetworkBenchmark {
    static final Goal ADDED = Goal.atMost("what the egress network adds to a procbox create, p50", 20, "ms", 25);
    static final int ROUNDS = 40;
    static final int WARM_UP = 5;
    static final int GVISOR_ROUNDS = 20;
    static final int QEMU_ROUNDS = 10;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    /** Creates with {@code egress} and without, alternating; the timed ones of each. */
    private record Rounds(List<Double> egress, List<Double> none) {
        static Rounds run(Api api, Map<String, Object> egress, Map<String, Object> none, int rounds) throws Exception {
            Rounds r = new Rounds(new ArrayList<>(), new ArrayList<>());
            for (int i = 0; i < WARM_UP + rounds; i++) {
                double e = timedCreate(api, egress);
                double n = timedCreate(api, none);
                if (i >= WARM_UP) {
                    r.egress.add(e);
                    r.none.add(n);
                }
            }
            return r;
        }

        double added() {
            return Stats.p50(egress) - Stats.p50(none);
        }
    }

    @Test
    void createWithEgressAgainstNone(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(java.nio.file.Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft");
        boolean gvisor = Host.gvisorMissing() == null;
        boolean qemu = Host.qemuMissing("default") == null;
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features",
                "core,api-v1,procbox,fingerprint-sha256,storage-reflink" + (gvisor ? ",gvisor" : "") + (qemu ? ",qemu" : "")),
                List.of("-Dvivarium.network.allow=198.51.100.0/24", "-Dvivarium.default.backend=procbox"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Map<String, Object> network = Map.of("mode", "egress", "allow", List.of("198.51.100.0/24"));
        Rounds procbox = Rounds.run(api, Map.of("network", network), Map.of(), ROUNDS);
        report.add(Table.latencies().latency("create with network egress", procbox.egress())
                .latency("create with network none (loopback only)", procbox.none()));
        report.check(ADDED, procbox.added());
        if (gvisor) {
            Rounds g = Rounds.run(api, Map.of("backend", "gvisor", "network", network), Map.of("backend", "gvisor"),
                    GVISOR_ROUNDS);
            report.add(Table.latencies().latency("gVisor create with network egress", g.egress())
                    .latency("gVisor create with network none", g.none()));
            report.add(String.format(java.util.Locale.ROOT, "what the egress network adds to a gVisor create, p50: %.1f ms "
                    + "(a named namespace, the same attach as procbox's, runsc's network stack; no goal of its own)", g.added()));
        } else {
            report.add("gVisor not measured: " + Host.gvisorMissing());
        }
        if (qemu) {
            Rounds q = Rounds.run(api, Map.of("backend", "qemu", "network", network), Map.of("backend", "qemu"), QEMU_ROUNDS);
            report.add(Table.latencies().latency("QEMU create with network egress", q.egress())
                    .latency("QEMU create with network none", q.none()));
            report.add(String.format(java.util.Locale.ROOT, "what the egress network adds to a QEMU create, p50: %.1f ms "
                    + "(a tap, a NIC, and the guest's eth0 configured through its agent after the boot; no goal of its own)",
                    q.added()));
        } else {
            report.add("QEMU not measured: " + Host.qemuMissing("default"));
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
