package io.vivarium.itests.e2e;

import static io.vivarium.itests.bench.Stats.p50;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Density, as cost grows with work (issue 22): one daemon, procbox sandboxes of the default spec.
 * With one live sandbox: the HTTP exec round trip of {@code true} and {@code GET /v1/sandboxes};
 * then {@value #SANDBOXES} live sandboxes in all, the other {@value #CREATED} created by
 * {@value #CLIENTS} clients at once (the create rate they sustain); with them: the exec round trip
 * in the first sandbox and spread over all of them, {@code GET /v1/sandboxes}, and the memory the
 * host, the daemon and the sandboxes' processes hold, against the one-sandbox figures. Every exec
 * figure gets the same untimed warm-up ({@value #WARM_UP} execs), and the creates theirs: as many
 * creates and deletes by the same clients first, so that the rate is a compiled daemon's (a fresh
 * one ran its first few hundred creates at three quarters of its later rate). The daemon's resident memory is
 * also read idle: after its start, and again once everything is deleted. {@value #SANDBOXES} is
 * core's default {@code max_sandboxes}; the host must have the processes, open files and loop
 * devices for them (checked first).
 */
@ExtendWith(Bench.class)
class DensityBenchmark {
    static final Goal EXEC = Goal.atMost("HTTP exec `true` p50, spread over 1,000 live sandboxes / with one live sandbox", 1.2,
            "×", 22);
    static final Goal CREATES = Goal.atLeast("creates sustained by 4 clients, up to 1,000 live sandboxes", 100, "/s", 22);
    static final Goal HOST_MEMORY = Goal.atMost("host memory per live sandbox (MemTotal − MemAvailable, 1 → 1,000)", 1, "MiB",
            22);
    static final Goal LIST = Goal.below("`GET /v1/sandboxes` with 1,000 live sandboxes, p50", 100, "ms", 22);
    static final Goal DAEMON_IDLE = Goal.atMost("daemon resident memory (VmRSS), idle after its start", 200, "MiB", 22);
    /** How long the daemon is left idle after the run before its memory is read again. */
    static final Duration IDLE_AFTER = Duration.ofSeconds(20);
    static final Goal DAEMON_IDLE_AFTER = Goal.atMost("daemon resident memory (VmRSS), idle again (20 s) after the run", 200,
            "MiB", 22);
    static final Goal DAEMON_PER_SANDBOX = Goal.atMost("daemon resident memory per live sandbox (1 → 1,000)", 100, "KiB", 22);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int SANDBOXES = 1000;
    static final int CREATED = SANDBOXES - 1;
    static final int CLIENTS = 4;
    static final int WARM_UP = 1000;
    static final int EXECS = 240;
    static final int LISTS = 20;
    /** What the host needs per live sandbox, about: processes (bwrap, its init, the agent's supervisor and worker) and daemon fds. */
    static final int PROCESSES_PER_SANDBOX = 6;
    static final int FILES_PER_SANDBOX = 4;

    @TempDir
    Path dir;

    /** What the host and the daemon hold at one moment, in KiB. */
    record Memory(long hostUsedKib, long daemonRssKib, long kernelKib, long shmemKib) {
        static Memory now(Daemon daemon) throws Exception {
            Map<String, Long> m = meminfoKib();
            return new Memory(m.get("MemTotal") - m.get("MemAvailable"), HostProcesses.rssKib(daemon.pid()),
                    m.get("SUnreclaim") + m.get("PageTables") + m.get("KernelStack"), m.get("Shmem"));
        }
    }

    @Test
    void aThousandLiveSandboxes(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        String lacking = hostLacks();
        Assumptions.assumeTrue(lacking == null, lacking);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        DeployFolder.await("procbox available", Duration.ofSeconds(30), () -> {
            for (JsonNode b : api.get("/v1/backends").body()) {
                if (b.get("name").asText().equals("procbox") && b.path("available").asBoolean()) {
                    return true;
                }
            }
            return null;
        });
        long idleKib = HostProcesses.rssKib(daemon.pid());
        parallel(WARM_UP, () -> {
            String id = api.createSandbox();
            Api.Response r = api.delete("/v1/sandboxes/" + id);
            if (r.status() / 100 != 2) {
                throw new AssertionError("delete failed: " + r.status() + " " + r.raw().body());
            }
        });

        String first = api.createSandbox();
        List<Double> execOne = execs(api, List.of(first));
        List<Double> listOne = lists(api);
        Memory one = Memory.now(daemon);

        List<Double> createMillis = Collections.synchronizedList(new ArrayList<>());
        ConcurrentLinkedQueue<Long> doneAt = new ConcurrentLinkedQueue<>();
        long c0 = System.nanoTime();
        parallel(CREATED, () -> {
            long t0 = System.nanoTime();
            api.createSandbox();
            createMillis.add(Stats.millisSince(t0));
            doneAt.add(System.nanoTime());
        });
        double createSeconds = Stats.millisSince(c0) / 1000;
        List<Long> finished = doneAt.stream().sorted().toList();

        List<String> ids = new ArrayList<>();
        List<Long> inits = new ArrayList<>();
        for (JsonNode sb : api.get("/v1/sandboxes").body()) {
            ids.add(sb.get("id").asText());
            inits.add(sb.get("pid").asLong());
        }
        if (ids.size() != SANDBOXES) {
            throw new AssertionError("expected " + SANDBOXES + " live sandboxes, the daemon lists " + ids.size());
        }
        Memory full = Memory.now(daemon);
        long sandboxPssKib = sandboxesPssKib(inits);
        List<Double> execFirst = execs(api, List.of(first));
        List<Double> execSpread = execs(api, ids);
        List<Double> listFull = lists(api);

        long d0 = System.nanoTime();
        AtomicInteger next = new AtomicInteger();
        parallel(SANDBOXES, () -> {
            Api.Response r = api.delete("/v1/sandboxes/" + ids.get(next.getAndIncrement()));
            if (r.status() / 100 != 2) {
                throw new AssertionError("delete failed: " + r.status() + " " + r.raw().body());
            }
        });
        double deleteSeconds = Stats.millisSince(d0) / 1000;
        long justAfterKib = HostProcesses.rssKib(daemon.pid());
        Thread.sleep(IDLE_AFTER.toMillis()); // an idle daemon gives back what the burst grew (bin/jvm.sh)
        long idleAfterKib = HostProcesses.rssKib(daemon.pid());

        report.add(Table.latencies()
                .latency("HTTP exec `true`, one live sandbox", execOne)
                .latency("HTTP exec `true` in that sandbox, " + SANDBOXES + " live", execFirst)
                .latency("HTTP exec `true` spread over the " + SANDBOXES + " live sandboxes (one each in turn)", execSpread)
                .latency("`GET /v1/sandboxes`, one live sandbox", listOne)
                .latency("`GET /v1/sandboxes`, " + SANDBOXES + " live", listFull)
                .latency("HTTP create, " + CLIENTS + " clients at once, from 1 to " + SANDBOXES + " live", createMillis));
        report.add(String.format("%d creates by %d clients in %.1f s: %.1f/s; the first 100 at %.1f/s, the last 100 at %.1f/s; "
                + "%d deletes by %d clients: %.1f/s", CREATED, CLIENTS, createSeconds, CREATED / createSeconds,
                rate(c0, finished.subList(0, 100)), rate(finished.get(CREATED - 101), finished.subList(CREATED - 100, CREATED)),
                SANDBOXES, CLIENTS, SANDBOXES / deleteSeconds));
        report.add(new Table("memory, per live sandbox from 1 to " + SANDBOXES, "KiB")
                .row("host: MemTotal − MemAvailable (also whatever else the machine did meanwhile)",
                        perSandbox(one.hostUsedKib(), full.hostUsedKib()))
                .row("… the daemon's VmRSS", perSandbox(one.daemonRssKib(), full.daemonRssKib()))
                .row("… the sandboxes' own processes (bwrap, init, agent), PSS (file pages included)",
                        (double) sandboxPssKib / SANDBOXES)
                .row("… the kernel's own, not reclaimable: SUnreclaim + PageTables + KernelStack",
                        perSandbox(one.kernelKib(), full.kernelKib()))
                .row("… shared memory (tmpfs /tmp of the sandboxes and such): Shmem", perSandbox(one.shmemKib(), full.shmemKib())));
        report.add(String.format("daemon VmRSS: %.0f MiB idle after its start, %.0f MiB with one sandbox, %.0f MiB with %d, "
                + "%.0f MiB just after the run, %.0f MiB after %d s idle", idleKib / 1024.0, one.daemonRssKib() / 1024.0,
                full.daemonRssKib() / 1024.0, SANDBOXES, justAfterKib / 1024.0, idleAfterKib / 1024.0, IDLE_AFTER.toSeconds()));
        report.check(EXEC, p50(execSpread) / p50(execOne));
        report.check(CREATES, CREATED / createSeconds);
        report.check(HOST_MEMORY, perSandbox(one.hostUsedKib(), full.hostUsedKib()) / 1024);
        report.check(LIST, p50(listFull));
        report.check(DAEMON_IDLE, idleKib / 1024.0);
        report.check(DAEMON_IDLE_AFTER, idleAfterKib / 1024.0);
        report.check(DAEMON_PER_SANDBOX, perSandbox(one.daemonRssKib(), full.daemonRssKib()));
    }

    /** Why this host cannot hold {@value #SANDBOXES} sandboxes (processes, open files, loop devices), or null. */
    private static String hostLacks() throws Exception {
        // readAllLines: Files.readString gets one byte of this sysctl file on some kernels
        long pidMax = Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/pid_max")).getFirst().strip());
        long running = ProcessHandle.allProcesses().count();
        if (pidMax - running < (long) PROCESSES_PER_SANDBOX * SANDBOXES) {
            return "kernel.pid_max " + pidMax + " leaves no room for " + SANDBOXES + " sandboxes' processes beside the "
                    + running + " running";
        }
        String files = Files.readAllLines(Path.of("/proc/self/limits")).stream().filter(l -> l.startsWith("Max open files"))
                .findFirst().orElse("").replaceAll("^Max open files\\s+", "").split("\\s+")[0];
        if (!files.equals("unlimited") && Long.parseLong(files) < (long) FILES_PER_SANDBOX * SANDBOXES + 1024) {
            return "the open-file limit (" + files + ") is too low for a daemon with " + SANDBOXES + " sandboxes: ulimit -n "
                    + (FILES_PER_SANDBOX * SANDBOXES + 1024);
        }
        if (!Files.exists(Path.of("/dev/loop-control"))) {
            return "no /dev/loop-control: each sandbox's workspace is a loop device";
        }
        return null;
    }

    /** {@value #WARM_UP} untimed execs, then {@value #EXECS} timed, going through {@code ids} in turn. */
    private static List<Double> execs(Api api, List<String> ids) throws Exception {
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < WARM_UP + EXECS; i++) {
            long t0 = System.nanoTime();
            JsonNode ran = api.exec(ids.get(i % ids.size()), "true");
            double took = Stats.millisSince(t0);
            if (ran.get("exit_code").asInt() != 0) {
                throw new AssertionError("exec failed: " + ran);
            }
            if (i >= WARM_UP) {
                ms.add(took);
            }
        }
        return ms;
    }

    /** A few untimed lists, then {@value #LISTS} timed. */
    private static List<Double> lists(Api api) throws Exception {
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < LISTS + 5; i++) {
            long t0 = System.nanoTime();
            Api.Response r = api.get("/v1/sandboxes");
            double took = Stats.millisSince(t0);
            if (r.status() != 200) {
                throw new AssertionError("list failed: " + r.status() + " " + r.raw().body());
            }
            if (i >= 5) {
                ms.add(took);
            }
        }
        return ms;
    }

    private interface Call {
        void run() throws Exception;
    }

    /** Runs {@code call} {@code n} times on {@value #CLIENTS} threads; the first failure fails the run. */
    private static void parallel(int n, Call call) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                calls.add(clients.submit(() -> {
                    call.run();
                    return null;
                }));
            }
            for (Future<?> f : calls) {
                f.get();
            }
        } finally {
            clients.shutdownNow();
        }
    }

    /**
     * PSS of the sandboxes' processes: each init, what runs under it, and the bwrap above it. The
     * process tree is read once: {@link ProcessHandle#descendants()} walks every process per call.
     */
    private static long sandboxesPssKib(List<Long> inits) {
        Map<Long, List<Long>> children = new HashMap<>();
        ProcessHandle.allProcesses().forEach(p -> p.parent().ifPresent(parent ->
                children.computeIfAbsent(parent.pid(), k -> new ArrayList<>()).add(p.pid())));
        Map<Long, Long> parents = new HashMap<>();
        children.forEach((parent, kids) -> kids.forEach(kid -> parents.put(kid, parent)));
        List<Long> pids = new ArrayList<>();
        for (long init : inits) {
            ArrayDeque<Long> todo = new ArrayDeque<>(List.of(init));
            while (!todo.isEmpty()) {
                long pid = todo.pop();
                pids.add(pid);
                todo.addAll(children.getOrDefault(pid, List.of()));
            }
            Long above = parents.get(init);
            if (above != null && "bwrap".equals(HostProcesses.comm(above))) {
                pids.add(above);
            }
        }
        return pids.stream().mapToLong(pid -> HostProcesses.memoryKib(pid).getOrDefault("Pss", 0L)).sum();
    }

    private static double perSandbox(long oneKib, long fullKib) {
        return (double) (fullKib - oneKib) / CREATED;
    }

    /** Completions per second from {@code from} (nanos) to the last of {@code done}. */
    private static double rate(long from, List<Long> done) {
        return done.size() / ((done.getLast() - from) / 1e9);
    }

    private static Map<String, Long> meminfoKib() throws Exception {
        Map<String, Long> kib = new HashMap<>();
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            String[] f = line.split("\\s+");
            kib.put(f[0].substring(0, f[0].length() - 1), Long.parseLong(f[1]));
        }
        return kib;
    }
}
