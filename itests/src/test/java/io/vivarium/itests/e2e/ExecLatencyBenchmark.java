package io.vivarium.itests.e2e;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.vivarium.backend.procbox.internal.BareSandbox;
import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side-by-side, in one run: HTTP exec round trip of {@code true} in an existing sandbox (through its
 * guest agent) against a bare {@code bwrap ... true} with a sandbox's own options spawned from a
 * shell loop, and sandbox create latency against the same bare spawn. Rounds alternate between the
 * two so that machine noise hits both alike; creates alternate between one of the default spec, which
 * procbox serves from its pool of sandboxes launched ahead, and a cold one (a workspace size no pool
 * holds: the sandbox is launched at create, its image copied). Also the guest agent's resident memory per sandbox
 * (VmRSS of its supervisor and worker). Not part of {@code verify}: run it with {@code ./vivarium
 * bench}. Results go to stdout and {@code target/bench/exec-latency.md}.
 */
class ExecLatencyBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 4;
    static final int PER_ROUND = 60;
    /** Creates of each kind, alternating: of the default spec (a pooled sandbox) and with another workspace size (cold). */
    static final int CREATES = 40;
    /** A workspace size procbox's pools do not hold: the sandbox is launched and its image copied at create, as without pools. */
    static final Map<String, Object> COLD = Map.of("disk_limit_mib", 1023);
    /**
     * Execs before the timed rounds. The daemon and this client start cold: their request paths run
     * interpreted for the first few hundred calls (p50 4-7 ms against ~1.5 ms once compiled, on a
     * 2-core VM), which is start-up cost, what ColdStartBenchmark is for, not the exec round trip
     * of a running daemon.
     */
    static final int WARM_UP_EXECS = 1000;

    @TempDir
    Path dir;

    @Test
    void execRoundTripAgainstBareBwrapAndCreateLatency() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        long init = api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
        Path work = Files.createDirectories(dir.resolve("bare-work"));
        for (int i = 0; i < WARM_UP_EXECS; i++) {
            api.exec(id, "true");
        }
        bareBwrap(work, 10);

        List<Double> exec = new ArrayList<>();
        List<Double> bare = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < PER_ROUND; i++) {
                long t0 = System.nanoTime();
                JsonNode ran = api.exec(id, "true");
                exec.add((System.nanoTime() - t0) / 1e6);
                if (ran.get("exit_code").asInt() != 0) {
                    throw new AssertionError("exec failed: " + ran);
                }
            }
            bare.addAll(bareBwrap(work, PER_ROUND));
        }

        // untimed: the first cold create formats its template (the first create above started the pools)
        create(api, Map.of());
        create(api, COLD);
        List<Double> create = new ArrayList<>();
        List<Double> coldCreate = new ArrayList<>();
        int servedByPool = 0;
        double stateWritesBefore = stateWriteSeconds(api);
        for (int i = 0; i < CREATES; i++) {
            Created pooled = create(api, Map.of());
            create.add(pooled.ms());
            servedByPool += pooled.fromPool() ? 1 : 0;
            coldCreate.add(create(api, COLD).ms());
        }
        double stateWriteMsPerCreate = (stateWriteSeconds(api) - stateWritesBefore) * 1000 / (2.0 * CREATES);
        long agentRssKib = agentRssKib(init);
        api.delete("/v1/sandboxes/" + id);

        double execP50 = pct(exec, 50);
        double bareP50 = pct(bare, 50);
        String report = String.join("\n",
                "| measurement | n | p50 ms | p99 ms |",
                "|---|---|---|---|",
                row("HTTP exec `true` in an existing sandbox", exec),
                row("bare `bwrap ... true` from a bash loop", bare),
                row("HTTP create sandbox (POST /v1/sandboxes), default spec: procbox's sandbox pool", create),
                row("HTTP create sandbox, launched at create, workspace image copied (cold: `disk_limit_mib` 1023, not pooled)",
                        coldCreate),
                "",
                String.format("exec p50 / bare bwrap p50 = **%.2f×** (goal ≤ 0.5×); create p50 / bare bwrap p50 = "
                        + "**%.2f×** pooled, **%.2f×** cold (goal ≤ 3×)", execP50 / bareP50, pct(create, 50) / bareP50,
                        pct(coldCreate, 50) / bareP50),
                String.format("default-spec creates served by the sandbox pool: **%d of %d** (the others launched"
                        + " their sandbox: the pool was empty)", servedByPool, CREATES),
                String.format("of a create, core's two durable writes of the sandbox's record (temp, fsync, rename, fsync "
                        + "of the folder; `vivarium_state_write_seconds`) = **%.2f ms** mean", stateWriteMsPerCreate),
                String.format("guest agent VmRSS per sandbox (supervisor + worker, after the execs) = **%d KiB** (goal ≤ 2048 KiB)",
                        agentRssKib),
                "");
        System.out.println(report);
        Path out = Path.of("target", "bench");
        Files.createDirectories(out);
        Files.writeString(out.resolve("exec-latency.md"), report);
    }

    /**
     * Times one create (checked for 201), then deletes the sandbox outside the timed section; the
     * delete gives the pools the time to replace what the create took, as a gap between creates would.
     */
    private Created create(Api api, Map<String, Object> body) throws Exception {
        long t0 = System.nanoTime();
        Api.Response r = api.post("/v1/sandboxes", body);
        double ms = (System.nanoTime() - t0) / 1e6;
        if (r.status() != 201) {
            throw new AssertionError("create failed: " + r.status() + " " + r.raw().body());
        }
        String id = r.body().get("id").asText();
        // procbox moves a pooled sandbox's files into a "pooled" folder of the sandbox's directory
        boolean fromPool = Files.isDirectory(dir.resolve("state").resolve("sandboxes").resolve(id).resolve("pooled"));
        api.delete("/v1/sandboxes/" + id);
        return new Created(ms, fromPool);
    }

    private record Created(double ms, boolean fromPool) {
    }

    /** The daemon's total time spent writing sandbox records so far, from its metrics. */
    private static double stateWriteSeconds(Api api) throws Exception {
        String series = "vivarium_state_write_seconds_sum ";
        String text = new String(api.raw("GET", "/metrics", null).body(), StandardCharsets.UTF_8);
        return text.lines().filter(l -> l.startsWith(series)).findFirst()
                .map(l -> Double.parseDouble(l.substring(series.length()).trim()))
                .orElseThrow(() -> new AssertionError("no " + series.strip() + " in /metrics"));
    }

    /**
     * Times each spawn of a bare bwrap with a sandbox's own options (from procbox's SandboxCommands)
     * inside one bash loop ($EPOCHREALTIME costs no fork), under no_new_privs as the daemon runs;
     * a spawn that does not exit 0 stops the loop and fails the run.
     */
    private static List<Double> bareBwrap(Path work, int n) throws Exception {
        String loop = "n=$1; shift; for i in $(seq \"$n\"); do s=$EPOCHREALTIME; \"$@\"; rc=$?; e=$EPOCHREALTIME; "
                + "if [ $rc -ne 0 ]; then echo \"bwrap exited $rc\" >&2; exit 1; fi; echo \"$s $e\"; done";
        List<String> cmd = new ArrayList<>();
        if (Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
            cmd.addAll(List.of("/usr/bin/setpriv", "--no-new-privs", "--"));
        }
        cmd.addAll(List.of("bash", "-c", loop, "bash", Integer.toString(n)));
        cmd.addAll(BareSandbox.argv(work, "bare-bwrap", List.of("/usr/bin/true")));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (Bounded.waitFor(p, Duration.ofMinutes(10), "the bare bwrap loop") != 0) {
            throw new IllegalStateException("bare bwrap loop failed: " + out);
        }
        List<Double> ms = new ArrayList<>();
        for (String line : out.strip().split("\n")) {
            String[] f = line.split(" ");
            ms.add((Double.parseDouble(f[1]) - Double.parseDouble(f[0])) * 1000);
        }
        if (ms.size() != n) {
            throw new IllegalStateException("expected " + n + " timings from the bare bwrap loop: " + out);
        }
        return ms;
    }

    /** VmRSS of the sandbox's agent processes (its root supervisor and the worker), from /proc. */
    private static long agentRssKib(long init) throws Exception {
        List<Long> agents = ProcessHandle.of(init).orElseThrow().descendants().map(ProcessHandle::pid)
                .filter(pid -> "vivarium-agent".equals(readOrEmpty(Path.of("/proc", pid.toString(), "comm")).strip()))
                .toList();
        if (agents.size() != 2) {
            throw new AssertionError("expected the agent's supervisor and worker under " + init + ", found " + agents);
        }
        long kib = 0;
        for (long pid : agents) {
            kib += readOrEmpty(Path.of("/proc", Long.toString(pid), "status")).lines()
                    .filter(line -> line.startsWith("VmRSS:"))
                    .mapToLong(line -> Long.parseLong(line.replaceAll("[^0-9]", "")))
                    .findFirst().orElseThrow();
        }
        return kib;
    }

    private static String readOrEmpty(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException gone) {
            return "";
        }
    }

    private static String row(String what, List<Double> ms) {
        return String.format("| %s | %d | %.2f | %.2f |", what, ms.size(), pct(ms, 50), pct(ms, 99));
    }

    static double pct(List<Double> values, int p) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(v);
        return v[Math.min(v.length - 1, (int) Math.ceil(p / 100.0 * v.length) - 1)];
    }
}
