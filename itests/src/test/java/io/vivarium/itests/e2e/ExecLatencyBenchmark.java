package io.vivarium.itests.e2e;

import static io.vivarium.itests.bench.Stats.p50;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.backend.procbox.internal.BareSandbox;
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
 * Side by side, in one run, alternating rounds so that machine noise hits every contender alike:
 * the HTTP exec round trip of {@code true} in a live sandbox (through its guest agent, over a
 * kept-alive connection, timed with the least client there is: {@link KeptAliveHttp}; the same
 * through the JDK's HttpClient is reported beside it) against the same command run by {@code nsenter} into a live bare bwrap
 * sandbox (procbox's exec before the agent) and against a bare {@code bwrap ... true} spawn with
 * a sandbox's own options (the historic contender); the two bare ones timed in a shell loop. Every
 * contender gets the same untimed warm-up. Then create latency against the same bare spawn (a new
 * sandbox is what a create makes): creates alternate between the default spec, which procbox
 * serves from its pool of sandboxes launched ahead, and a cold one (a workspace size no pool holds:
 * launched at create, its image copied). Also the guest agent's resident memory per sandbox.
 */
@ExtendWith(Bench.class)
class ExecLatencyBenchmark {
    static final Goal EXEC_VS_NSENTER = Goal.atMost("HTTP exec `true` p50 / `nsenter` into a live bare sandbox p50", 0.5,
            "×", 22);
    static final Goal EXEC_VS_SPAWN = Goal.atMost("HTTP exec `true` p50 / bare bwrap spawn p50", 0.5, "×", 7);
    static final Goal EXEC_VS_SPAWN_NEXT = Goal.atMost(EXEC_VS_SPAWN.figure(), 0.3, "×", 22);
    static final Goal CREATE_VS_SPAWN = Goal.atMost("create p50 (default spec: the sandbox pool) / bare bwrap spawn p50", 3,
            "×", 7);
    static final Goal CREATE_VS_SPAWN_NEXT = Goal.atMost(CREATE_VS_SPAWN.figure(), 1, "×", 22);
    static final Goal CREATE_MILLIS = Goal.below("create p50 (default spec)", 50, "ms", 2);
    static final Goal AGENT_RSS = Goal.atMost("guest agent VmRSS per sandbox (supervisor + worker)", 2048, "KiB", 7);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 4;
    static final int PER_ROUND = 60;
    /** Creates of each kind, alternating: of the default spec (a pooled sandbox) and with another workspace size (cold). */
    static final int CREATES = 40;
    /** A workspace size procbox's pools do not hold: the sandbox is launched and its image copied at create, as without pools. */
    static final Map<String, Object> COLD = Map.of("disk_limit_mib", 1023);
    /**
     * Untimed runs of each contender before the rounds. The daemon and this client start cold: their
     * request paths run interpreted, then compiled by C1 with profiling, and reach C2 only after
     * several thousand calls (measured on a fresh daemon: exec p50 1.52 ms after 1,200 calls, 1.35
     * after 2,400, 1.10 after 8,000, 1.02 after 16,000). That is start-up cost (ColdStartBenchmark's),
     * not the exec round trip of a running daemon; the bare contenders get as many, so that what they
     * touch is as warm.
     */
    static final int WARM_UP = 15_000;
    static final List<String> TRUE = List.of("/usr/bin/true");
    static final String EXEC_TRUE = "{\"args\":[\"/usr/bin/true\"]}";

    @TempDir
    Path dir;

    @Test
    void execRoundTripAgainstNsenterAndABareSpawnAndCreateLatency(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        long init = api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
        Path work = Files.createDirectories(dir.resolve("bare-work"));
        List<String> spawn = BareSandbox.argv(work, "bare-spawn", TRUE);
        Process live = startLiveBareSandbox(Files.createDirectories(dir.resolve("live-work")));
        try (KeptAliveHttp http = new KeptAliveHttp(daemon.baseUrl(), daemon.adminToken())) {
            List<String> enter = BareSandbox.enter(processIn(live, "sleep"), TRUE);
            // the bare contenders first: the connection, made at the first exec, would sit idle through their loops
            timedLoop(enter, WARM_UP);
            timedLoop(spawn, WARM_UP);
            for (int i = 0; i < WARM_UP; i++) {
                exec(http, id);
                exec(api, id);
            }

            List<Double> exec = new ArrayList<>();
            List<Double> execJdkClient = new ArrayList<>();
            List<Double> nsenter = new ArrayList<>();
            List<Double> bare = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                for (int i = 0; i < PER_ROUND; i++) {
                    exec.add(exec(http, id));
                }
                for (int i = 0; i < PER_ROUND; i++) {
                    execJdkClient.add(exec(api, id));
                }
                nsenter.addAll(timedLoop(enter, PER_ROUND));
                bare.addAll(timedLoop(spawn, PER_ROUND));
            }

            // untimed: the first cold create formats its template (the first create above started the pools)
            create(http, api, Map.of());
            create(http, api, COLD);
            List<Double> create = new ArrayList<>();
            List<Double> coldCreate = new ArrayList<>();
            List<Double> createJdkClient = new ArrayList<>();
            int servedByPool = 0;
            double stateWritesBefore = stateWriteSeconds(api);
            for (int i = 0; i < CREATES; i++) {
                Created pooled = create(http, api, Map.of());
                create.add(pooled.ms());
                servedByPool += pooled.fromPool() ? 1 : 0;
                coldCreate.add(create(http, api, COLD).ms());
                createJdkClient.add(create(api, Map.of()));
            }
            double stateWriteMsPerCreate = (stateWriteSeconds(api) - stateWritesBefore) * 1000 / (3.0 * CREATES);
            long agentRssKib = agentRssKib(init);
            api.delete("/v1/sandboxes/" + id);

            report.add(Table.latencies()
                    .latency("HTTP exec `true` in a live sandbox (its agent; one kept-alive connection, a plain HTTP/1.1 client)", exec)
                    .latency("the same exec through the JDK's HttpClient (kept alive; its selector thread hands each answer over)",
                            execJdkClient)
                    .latency("`nsenter` into a live bare bwrap sandbox running `true`, from a bash loop", nsenter)
                    .latency("bare `bwrap ... true` spawn with a sandbox's options, from a bash loop", bare)
                    .latency("HTTP create (POST /v1/sandboxes), default spec: procbox's sandbox pool", create)
                    .latency("the same create through the JDK's HttpClient", createJdkClient)
                    .latency("HTTP create, launched at create, workspace image copied (cold: `disk_limit_mib` 1023, not pooled)",
                            coldCreate));
            report.add(String.format("default-spec creates served by the sandbox pool: %d of %d; of a create, core's two "
                    + "durable writes of the sandbox's record (`vivarium_state_write_seconds`): %.2f ms mean; cold create p50 / "
                    + "bare spawn p50: %.2f×", servedByPool, CREATES, stateWriteMsPerCreate, p50(coldCreate) / p50(bare)));
            report.check(EXEC_VS_NSENTER, p50(exec) / p50(nsenter));
            report.check(EXEC_VS_SPAWN, p50(exec) / p50(bare));
            report.check(EXEC_VS_SPAWN_NEXT, p50(exec) / p50(bare));
            report.check(CREATE_VS_SPAWN, p50(create) / p50(bare));
            report.check(CREATE_VS_SPAWN_NEXT, p50(create) / p50(bare));
            report.check(CREATE_MILLIS, p50(create));
            report.check(AGENT_RSS, agentRssKib);
        } finally {
            live.descendants().forEach(ProcessHandle::destroyForcibly);
            Bounded.waitFor(live.destroyForcibly(), Duration.ofSeconds(30), "the live bare sandbox ends once killed");
        }
    }

    /** One HTTP exec of {@code true} on {@code http}'s connection, checked for exit code 0 outside the timed call; its milliseconds. */
    private static double exec(KeptAliveHttp http, String id) throws Exception {
        long t0 = System.nanoTime();
        KeptAliveHttp.Answer ran = http.post("/v1/sandboxes/" + id + "/exec", EXEC_TRUE);
        double ms = Stats.millisSince(t0);
        if (ran.status() != 200 || Api.JSON.readTree(ran.body()).get("exit_code").asInt() != 0) {
            throw new AssertionError("exec failed: " + ran);
        }
        return ms;
    }

    /** The same through the e2e client (the JDK's HttpClient). */
    private static double exec(Api api, String id) throws Exception {
        long t0 = System.nanoTime();
        JsonNode ran = api.exec(id, TRUE.get(0));
        double ms = Stats.millisSince(t0);
        if (ran.get("exit_code").asInt() != 0) {
            throw new AssertionError("exec failed: " + ran);
        }
        return ms;
    }

    /** A bare bwrap sandbox with a sandbox's options that stays up ({@code sleep infinity}), under no_new_privs as the daemon runs. */
    private static Process startLiveBareSandbox(Path work) throws Exception {
        List<String> cmd = new ArrayList<>(noNewPrivs());
        cmd.addAll(BareSandbox.argv(work, "bare-live", List.of("/usr/bin/sleep", "infinity")));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** The pid of the process named {@code comm} under {@code root}, once it is there. */
    private static long processIn(Process root, String comm) throws Exception {
        return DeployFolder.await("the live bare sandbox's " + comm, Duration.ofSeconds(30), () -> {
            if (!root.isAlive()) {
                throw new AssertionError("the live bare sandbox exited with " + root.exitValue());
            }
            return root.descendants().map(ProcessHandle::pid)
                    .filter(pid -> comm.equals(HostProcesses.comm(pid))).findFirst().orElse(null);
        });
    }

    /**
     * Times each of {@code n} runs of {@code argv} inside one bash loop ($EPOCHREALTIME costs no
     * fork), under no_new_privs as the daemon runs; a run that does not exit 0 stops the loop and
     * fails the benchmark.
     */
    private static List<Double> timedLoop(List<String> argv, int n) throws Exception {
        String loop = "n=$1; shift; for i in $(seq \"$n\"); do s=$EPOCHREALTIME; \"$@\"; rc=$?; e=$EPOCHREALTIME; "
                + "if [ $rc -ne 0 ]; then echo \"$1 exited $rc\" >&2; exit 1; fi; echo \"$s $e\"; done";
        List<String> cmd = new ArrayList<>(noNewPrivs());
        cmd.addAll(List.of("bash", "-c", loop, "bash", Integer.toString(n)));
        cmd.addAll(argv);
        Bounded.Ran ran = Bounded.run(Duration.ofMinutes(10), cmd.toArray(String[]::new));
        String out = ran.output();
        if (ran.exitCode() != 0) {
            throw new IllegalStateException("the timed loop of " + argv + " failed: " + out);
        }
        List<Double> ms = new ArrayList<>();
        for (String line : out.strip().split("\n")) {
            String[] f = line.split(" ");
            ms.add((Double.parseDouble(f[1]) - Double.parseDouble(f[0])) * 1000);
        }
        if (ms.size() != n) {
            throw new IllegalStateException("expected " + n + " timings from the loop of " + argv + ": " + out);
        }
        return ms;
    }

    private static List<String> noNewPrivs() {
        return Files.isExecutable(Path.of("/usr/bin/setpriv")) ? List.of("/usr/bin/setpriv", "--no-new-privs", "--") : List.of();
    }

    /**
     * Times one create (checked for 201), then deletes the sandbox outside the timed section; the
     * delete gives the pools the time to replace what the create took, as a gap between creates would.
     */
    /** A create timed on {@code http}'s connection, like the execs; deleted through {@code api}, untimed. */
    private Created create(KeptAliveHttp http, Api api, Map<String, Object> body) throws Exception {
        String json = Api.JSON.writeValueAsString(body);
        long t0 = System.nanoTime();
        KeptAliveHttp.Answer r = http.post("/v1/sandboxes", json);
        double ms = Stats.millisSince(t0);
        if (r.status() != 201) {
            throw new AssertionError("create failed: " + r);
        }
        String id = Api.JSON.readTree(r.body()).get("id").asText();
        // procbox moves a pooled sandbox's files into a "pooled" folder of the sandbox's directory
        boolean fromPool = Files.isDirectory(dir.resolve("state").resolve("sandboxes").resolve(id).resolve("pooled"));
        api.delete("/v1/sandboxes/" + id);
        return new Created(ms, fromPool);
    }

    /** A create of {@code body} through the e2e client (the JDK's HttpClient), deleted after, untimed; its milliseconds. */
    private static double create(Api api, Map<String, Object> body) throws Exception {
        long t0 = System.nanoTime();
        Api.Response r = api.post("/v1/sandboxes", body);
        double ms = Stats.millisSince(t0);
        if (r.status() != 201) {
            throw new AssertionError("create failed: " + r.status() + " " + r.raw().body());
        }
        api.delete("/v1/sandboxes/" + r.body().get("id").asText());
        return ms;
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

    /** VmRSS of the sandbox's agent processes (its root supervisor and the worker), from /proc. */
    private static long agentRssKib(long init) {
        ProcessHandle root = ProcessHandle.of(init).orElseThrow();
        // the init is the agent's supervisor itself (bwrap --as-pid-1)
        List<Long> agents = Stream.concat(Stream.of(root), root.descendants())
                .map(ProcessHandle::pid).filter(pid -> "vivarium-agent".equals(HostProcesses.comm(pid))).toList();
        if (agents.size() != 2) {
            throw new AssertionError("expected the agent's supervisor and worker under " + init + ", found " + agents);
        }
        return agents.stream().mapToLong(HostProcesses::rssKib).sum();
    }
}
