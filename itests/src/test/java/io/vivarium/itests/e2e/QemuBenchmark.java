package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run of one daemon: HTTP exec round trip of {@code true} in a QEMU VM (its
 * agent on virtio-serial) against the same in a procbox sandbox, rounds alternating so that machine
 * noise hits both alike; and the resident host memory (VmRSS of QEMU) of an idle 256 MiB guest.
 * Not part of {@code verify}: {@code ./vivarium bench QemuBenchmark}. Results go to stdout and
 * {@code target/bench/qemu.md}.
 */
class QemuBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 4;
    static final int PER_ROUND = 25;
    static final int WARM_UP_EXECS = 200;

    @TempDir
    Path dir;

    @Test
    void execRoundTripInAVmAgainstProcboxAndIdleVmMemory() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features", "core,api-v1,procbox,qemu"));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String vm = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1));
        String procbox = api.createSandbox(Map.of("backend", "procbox"));
        for (int i = 0; i < WARM_UP_EXECS; i++) {
            api.exec(vm, "true");
            api.exec(procbox, "true");
        }
        List<Double> inVm = new ArrayList<>();
        List<Double> inProcbox = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            time(api, vm, inVm);
            time(api, procbox, inProcbox);
        }
        Thread.sleep(5000); // idle: let the guest settle before its memory is read
        long qemuPid = api.get("/v1/sandboxes/" + vm).body().get("pid").asLong();
        long rssKib = Files.readString(Path.of("/proc", Long.toString(qemuPid), "status")).lines()
                .filter(line -> line.startsWith("VmRSS:")).mapToLong(line -> Long.parseLong(line.replaceAll("[^0-9]", "")))
                .findFirst().orElseThrow();
        JsonNode backend = null;
        for (JsonNode b : api.get("/v1/backends").body()) {
            if (b.get("name").asText().equals("qemu")) {
                backend = b;
            }
        }
        api.delete("/v1/sandboxes/" + vm);
        api.delete("/v1/sandboxes/" + procbox);

        String report = String.join("\n",
                "| measurement | n | p50 ms | p99 ms |",
                "|---|---|---|---|",
                row("HTTP exec `true` in a QEMU VM (256 MiB, 1 vCPU)", inVm),
                row("HTTP exec `true` in a procbox sandbox", inProcbox),
                "",
                String.format("VM exec p50 / procbox exec p50 = **%.2f×**; accelerator: %s", ExecLatencyBenchmark.pct(inVm, 50)
                        / ExecLatencyBenchmark.pct(inProcbox, 50), backend.get("details").get("accelerator").asText()),
                String.format("QEMU VmRSS of an idle 256 MiB guest (after the execs) = **%d MiB**", rssKib / 1024),
                "");
        System.out.println(report);
        Path out = Path.of("target", "bench");
        Files.createDirectories(out);
        Files.writeString(out.resolve("qemu.md"), report);
    }

    private static void time(Api api, String id, List<Double> into) throws Exception {
        for (int i = 0; i < PER_ROUND; i++) {
            long t0 = System.nanoTime();
            JsonNode ran = api.exec(id, "true");
            into.add((System.nanoTime() - t0) / 1e6);
            if (ran.get("exit_code").asInt() != 0) {
                throw new AssertionError("exec failed: " + ran);
            }
        }
    }

    private static String row(String what, List<Double> ms) {
        return String.format("| %s | %d | %.2f | %.2f |", what, ms.size(), ExecLatencyBenchmark.pct(ms, 50),
                ExecLatencyBenchmark.pct(ms, 99));
    }
}
