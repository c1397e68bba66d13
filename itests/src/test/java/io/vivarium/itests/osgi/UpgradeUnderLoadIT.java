package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.api.ApiException;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.Caller;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;

import org.junit.Assume;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.ServiceEvent;
import org.osgi.framework.ServiceListener;

/**
 * The upgrade promise under load: while clients keep running commands in five sandboxes (over
 * HTTP, as a real client does, and through {@link SandboxService}), the procbox bundle is updated
 * to a new build ten times ({@code update} + refresh of that bundle alone). No request may fail,
 * no sandbox may lose its init, its background processes or its workspace, and the new version
 * must be what core and {@code /v1/backends} report after each update.
 *
 * <p>Measures failed requests, request latency (p50, p99, max: the longest stall a client saw) and,
 * per update, the time from {@code update()} to the new version being listed by core for good,
 * with their goals ({@link BenchReport}: {@code target/bench/UpgradeUnderLoadIT.md}).
 */
@RunWith(PaxExam.class)
public class UpgradeUnderLoadIT extends VivariumOsgiTestSupport {
    static final Goal FAILED = Goal.exactly("failed requests while procbox is updated 10 times (update() + refresh)", 0, "", 4);
    static final Goal AVAILABLE = Goal.below("update() → new version listed by core for good, max", 500, "ms", 4);

    private static final Caller ADMIN = new Caller("default", Role.ADMIN);
    private static final int SANDBOXES = 5;
    private static final int UPDATES = 10;
    private static final int HTTP_CLIENTS = 3;
    private static final int SERVICE_CLIENTS = 1;
    /** Load that runs between two updates, so each update meets requests in every state. */
    private static final Duration LOAD_BETWEEN_UPDATES = Duration.ofMillis(250);

    @Test
    public void tenUpdatesUnderExecLoadFailNoRequestAndKeepEverySandbox() throws Exception {
        BenchReport bench = new BenchReport(getClass().getSimpleName(), List.of(FAILED, AVAILABLE));
        bench.writeAfter(() -> upgradeUnderLoad(bench));
    }

    private void upgradeUnderLoad(BenchReport bench) throws Exception {
        Assume.assumeTrue("needs bubblewrap (/usr/bin/bwrap) and root to run procbox sandboxes",
                Files.isExecutable(Path.of("/usr/bin/bwrap")) && "root".equals(System.getProperty("user.name")));
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
        await("core lists procbox as available", () -> procboxInfo(sandboxes) != null && procboxInfo(sandboxes).available(),
                sandboxes::backends);

        byte[] shipped = ProcboxBuilds.shippedJar(procbox);
        List<byte[]> builds = new ArrayList<>();
        for (int n = 1; n <= UPDATES; n++) {
            builds.add(ProcboxBuilds.withVersion(shipped, "0.1.0.upgrade" + n));
        }

        List<String> ids = new ArrayList<>();
        Map<String, Long> initPids = new LinkedHashMap<>();
        Map<String, String> backgroundPids = new LinkedHashMap<>();
        Load load = null;
        BackendWatch watch = null;
        try {
            for (int i = 0; i < SANDBOXES; i++) {
                SandboxInfo info = sandboxes.create(ADMIN, null);
                ids.add(info.id());
                assertEquals(info.toString(), "running", info.status());
                assertTrue(info.toString(), info.pid() > 0);
                initPids.put(info.id(), info.pid());
                ok(sandboxes, info.id(), "sh", "-c", "echo \"$1\" > /work/marker", "sh", info.id());
                ok(sandboxes, info.id(), "sh", "-c", "sleep 600 & echo $! > /work/bg.pid");
                String bg = ok(sandboxes, info.id(), "cat", "/work/bg.pid").stdout().strip();
                assertTrue("background pid of " + info.id() + ": '" + bg + "'", bg.matches("[0-9]+"));
                backgroundPids.put(info.id(), bg);
            }

            watch = new BackendWatch(sandboxes);
            watch.start();
            context().addServiceListener(watch, "(&(objectClass=" + SandboxBackend.class.getName() + ")("
                    + SandboxBackend.NAME_PROPERTY + "=procbox))");

            load = new Load(sandboxes, ids, baseUri(), adminToken());
            load.start();
            Load l = load;
            long warm = System.nanoTime() + LOAD_BETWEEN_UPDATES.toNanos();
            await("every client completed requests before the first update",
                    () -> l.minCompletedPerClient() >= 3 && System.nanoTime() - warm > 0, l::summary);

            List<UpdateTiming> timings = new ArrayList<>();
            for (byte[] build : builds) {
                String version = ProcboxBuilds.versionOf(build);
                ProcboxBuilds.Upgrade u = ProcboxBuilds.updateAndRefresh(context(), procbox, build, TIMEOUT);
                BackendWatch w = watch;
                await("core lists procbox " + version, () -> version.equals(w.currentVersion()), w::currentVersion);
                long availableAt = w.becameCurrentAt(version);
                timings.add(new UpdateTiming(u, w.firstSeenAfter(version, u.started()), availableAt,
                        w.unregistrationsBetween(u.started(), availableAt), w.absentNanosBetween(u.started(), availableAt)));
                assertEquals("SandboxService.backends() after updating to " + version, version,
                        procboxInfo(sandboxes).version());
                Http listed = get("/v1/backends", true);
                assertEquals("GET /v1/backends after updating to " + version + ": " + listed, version,
                        procboxVersion(listed));
                long mark = load.completed();
                long until = System.nanoTime() + LOAD_BETWEEN_UPDATES.toNanos();
                await("clients keep completing requests after the update to " + version,
                        () -> l.completed() >= mark + HTTP_CLIENTS + SERVICE_CLIENTS && System.nanoTime() - until > 0,
                        l::summary);
            }
            load.stop();
            context().removeServiceListener(watch);
            watch.stop();
            // Every promise is checked and reported together, so one broken promise does not hide another.
            List<String> broken = new ArrayList<>();
            for (String id : ids) {
                try {
                    SandboxInfo info = sandboxes.get(ADMIN, id);
                    expect(broken, "status of " + id + " after the updates (" + info + ")", "running", info.status());
                    expect(broken, "init pid of " + id + " after the updates", initPids.get(id), info.pid());
                    expect(broken, "background pid recorded in " + id, backgroundPids.get(id),
                            exec(sandboxes, id, "cat", "/work/bg.pid").stdout().strip());
                    ExecResult alive = exec(sandboxes, id, "sh", "-c", "kill -0 \"$(cat /work/bg.pid)\"");
                    expect(broken, "kill -0 of background process " + backgroundPids.get(id) + " in " + id + " (" + alive
                            + ")", 0, alive.exitCode());
                    expect(broken, "marker inside " + id, id, exec(sandboxes, id, "cat", "/work/marker").stdout().strip());
                    // procbox mounts the workspace in the sandbox's own namespace: the host reaches it through the init's root
                    Path onHost = Path.of("/proc", Long.toString(info.pid()), "root", "work", "marker");
                    expect(broken, "marker of " + id + " on the host (" + onHost + ")", id,
                            Files.readString(onHost, StandardCharsets.UTF_8).strip());
                } catch (RuntimeException | IOException e) {
                    broken.add("checking sandbox " + id + " after the updates failed: " + e);
                }
            }
            String last = ProcboxBuilds.versionOf(builds.get(builds.size() - 1));
            expect(broken, "version core lists at the end", last, procboxInfo(sandboxes).version());
            expect(broken, "sandboxes core counts for procbox", SANDBOXES, procboxInfo(sandboxes).sandboxes());
            long slow = timings.stream().filter(t -> t.availableMillis() > 5_000).count();
            expect(broken, "updates after which procbox took longer than core's 5 s backend wait to return", 0L, slow);
            expect(broken, "failed requests during " + UPDATES + " updates (listed in target/bench/UpgradeUnderLoadIT.md)",
                    0, load.failures().size());

            // informational: each `sleep 600 &` inherited its exec's stdout and stderr, so two output-pump threads of
            // the revision that ran it keep reading (see LeakIT#b_...); they end when the sandboxes are deleted
            long pumps = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("procbox-out-") || t.getName().startsWith("procbox-err-")).count();
            Report report = new Report(load, timings, broken, pumps);
            bench.add(report.text);
            List<Double> available = timings.stream().map(UpdateTiming::availableMillis).toList();
            bench.check(FAILED, load.failures().size());
            bench.check(AVAILABLE, available.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN));
            assertTrue(broken.size() + " broken promise(s) while upgrading under load:\n  " + String.join("\n  ", broken)
                    + (load.failures().isEmpty() ? "" : "\nfailed requests:\n  " + String.join("\n  ", load.failures())),
                    broken.isEmpty());
        } finally {
            if (load != null) {
                load.stop();
            }
            if (watch != null) {
                context().removeServiceListener(watch);
                watch.stop();
            }
            for (String id : ids) {
                try {
                    sandboxes.delete(ADMIN, id);
                } catch (ApiException e) {
                    System.out.println("[UpgradeUnderLoadIT] cleanup: cannot delete " + id + ": " + e.getMessage());
                }
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    private static BackendInfo procboxInfo(SandboxService sandboxes) {
        return sandboxes.backends().stream().filter(b -> b.name().equals("procbox")).findFirst().orElse(null);
    }

    private static String procboxVersion(Http backends) {
        if (backends.status() != 200) {
            return null;
        }
        for (JsonNode b : backends.json()) {
            if (b.path("name").asText().equals("procbox")) {
                return b.path("version").asText();
            }
        }
        return null;
    }

    private static ExecResult exec(SandboxService sandboxes, String id, String... argv) {
        return sandboxes.exec(ADMIN, id, new ExecRequest(List.of(argv), 10, null, null, null, null));
    }

    private static ExecResult ok(SandboxService sandboxes, String id, String... argv) {
        ExecResult r = exec(sandboxes, id, argv);
        assertEquals("exit code of " + List.of(argv) + " in " + id + ": " + r, 0, r.exitCode());
        return r;
    }

    private static void expect(List<String> broken, String what, Object expected, Object actual) {
        if (!java.util.Objects.equals(expected, actual)) {
            broken.add(what + ": expected " + expected + ", got " + actual);
        }
    }

    private static double millis(long nanos) {
        return nanos / 1e6;
    }

    // ------------------------------------------------------------------ what core lists, polled tightly

    /**
     * Polls {@code SandboxService.backends()} about every millisecond and records each change of the
     * procbox version it lists (null while procbox is not listed); as a service listener it also
     * records every unregistration of the procbox {@link SandboxBackend} service (a "bounce").
     */
    private static final class BackendWatch implements ServiceListener {
        private record Change(long at, String version) {
        }

        private final SandboxService sandboxes;
        private final List<Change> changes = Collections.synchronizedList(new ArrayList<>());
        private final List<Long> unregistrations = Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private volatile String current;
        private Thread thread;

        BackendWatch(SandboxService sandboxes) {
            this.sandboxes = sandboxes;
        }

        void start() {
            current = version();
            changes.add(new Change(System.nanoTime(), current));
            thread = Thread.ofPlatform().daemon().name("upgrade-it-backend-watch").start(this::poll);
        }

        private void poll() {
            while (running.get()) {
                String v = version();
                long now = System.nanoTime();
                if (!java.util.Objects.equals(v, current)) {
                    changes.add(new Change(now, v));
                    current = v;
                }
                LockSupport.parkNanos(1_000_000);
            }
        }

        private String version() {
            BackendInfo b = procboxInfo(sandboxes);
            return b == null ? null : b.version();
        }

        String currentVersion() {
            return current;
        }

        /** When the version last became {@code version} (it is current when this is called). */
        long becameCurrentAt(String version) {
            synchronized (changes) {
                for (int i = changes.size() - 1; i >= 0; i--) {
                    if (version.equals(changes.get(i).version())) {
                        return changes.get(i).at();
                    }
                }
            }
            throw new AssertionError("procbox " + version + " was never listed");
        }

        long firstSeenAfter(String version, long since) {
            synchronized (changes) {
                for (Change c : changes) {
                    if (c.at() >= since && version.equals(c.version())) {
                        return c.at();
                    }
                }
            }
            throw new AssertionError("procbox " + version + " was never listed");
        }

        /** Total time in [from, to] during which core listed no procbox. */
        long absentNanosBetween(long from, long to) {
            long absent = 0;
            synchronized (changes) {
                for (int i = 0; i < changes.size(); i++) {
                    if (changes.get(i).version() != null) {
                        continue;
                    }
                    long start = Math.max(from, changes.get(i).at());
                    long end = Math.min(to, i + 1 < changes.size() ? changes.get(i + 1).at() : to);
                    absent += Math.max(0, end - start);
                }
            }
            return absent;
        }

        int unregistrationsBetween(long from, long to) {
            synchronized (unregistrations) {
                return (int) unregistrations.stream().filter(t -> t >= from && t <= to).count();
            }
        }

        @Override
        public void serviceChanged(ServiceEvent event) {
            if (event.getType() == ServiceEvent.UNREGISTERING) {
                unregistrations.add(System.nanoTime());
            }
        }

        void stop() {
            running.set(false);
            if (thread != null) {
                try {
                    thread.join(TIMEOUT);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    // ------------------------------------------------------------------ load

    private record Sample(long start, long nanos, boolean ok) {
    }

    /**
     * {@value #HTTP_CLIENTS} HTTP clients ({@code POST /v1/sandboxes/{id}/exec} with the admin token,
     * one keep-alive client each) and {@value #SERVICE_CLIENTS} {@link SandboxService} client(s),
     * each running {@code true} in the sandboxes round robin until stopped. Any non-200 answer, a
     * non-zero exit code or an exception is a failed request.
     */
    private static final class Load {
        private final SandboxService sandboxes;
        private final List<String> ids;
        private final String base;
        private final String token;
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final AtomicLong completed = new AtomicLong();
        private final List<Thread> threads = new ArrayList<>();
        private final List<List<Sample>> samples = new ArrayList<>();
        private final List<String> failures = Collections.synchronizedList(new ArrayList<>());
        private final long t0 = System.nanoTime();

        Load(SandboxService sandboxes, List<String> ids, String base, String token) {
            this.sandboxes = sandboxes;
            this.ids = ids;
            this.base = base;
            this.token = token;
        }

        void start() {
            for (int c = 0; c < HTTP_CLIENTS + SERVICE_CLIENTS; c++) {
                List<Sample> mine = Collections.synchronizedList(new ArrayList<>());
                samples.add(mine);
                int client = c;
                Runnable body = c < HTTP_CLIENTS ? () -> httpClient(client, mine) : () -> serviceClient(client, mine);
                threads.add(Thread.ofPlatform().daemon().name("upgrade-it-client-" + c).start(body));
            }
        }

        private void httpClient(int client, List<Sample> mine) {
            try (HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5)).build()) {
                for (int i = client; running.get(); i++) {
                    String id = ids.get(i % ids.size());
                    HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/v1/sandboxes/" + id + "/exec"))
                            .timeout(Duration.ofSeconds(30))
                            .header("Authorization", "Bearer " + token)
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"args\":[\"true\"]}"))
                            .build();
                    long start = System.nanoTime();
                    String failure;
                    try {
                        HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
                        failure = resp.statusCode() == 200 && resp.body().contains("\"exit_code\":0") ? null
                                : "HTTP " + resp.statusCode()
                                        + resp.headers().firstValue("Retry-After").map(r -> " (Retry-After " + r + ")").orElse("")
                                        + " " + shorten(resp.body());
                    } catch (IOException e) {
                        failure = "no response: " + e;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    record(mine, client, id, start, failure);
                }
            }
        }

        private void serviceClient(int client, List<Sample> mine) {
            for (int i = client; running.get(); i++) {
                String id = ids.get(i % ids.size());
                long start = System.nanoTime();
                String failure;
                try {
                    ExecResult r = exec(sandboxes, id, "true");
                    failure = r.exitCode() == 0 ? null : "exit " + r.exitCode() + ": " + r;
                } catch (ApiException e) {
                    failure = "ApiException " + e.status() + " " + e.getMessage();
                } catch (RuntimeException | Error e) {
                    failure = e.toString();
                }
                record(mine, client, id, start, failure);
            }
        }

        private void record(List<Sample> mine, int client, String id, long start, String failure) {
            long nanos = System.nanoTime() - start;
            mine.add(new Sample(start, nanos, failure == null));
            completed.incrementAndGet();
            if (failure != null) {
                failures.add(String.format(Locale.ROOT, "t=%.0f ms client %d (%s) sandbox %s after %.1f ms: %s",
                        millis(start - t0), client, client < HTTP_CLIENTS ? "http" : "service", id, millis(nanos),
                        failure.length() > 400 ? failure.substring(0, 400) + "..." : failure));
            }
        }

        /** An HTML error page (an exception that escaped the servlet) by its title; anything else as is. */
        private static String shorten(String body) {
            int from = body.indexOf("<title>");
            int to = body.indexOf("</title>");
            return from >= 0 && to > from ? "(HTML error page) " + body.substring(from + 7, to) : body;
        }

        long completed() {
            return completed.get();
        }

        long minCompletedPerClient() {
            return samples.stream().mapToLong(List::size).min().orElse(0);
        }

        List<String> failures() {
            synchronized (failures) {
                return List.copyOf(failures);
            }
        }

        List<Sample> allSamples() {
            List<Sample> all = new ArrayList<>();
            for (List<Sample> s : samples) {
                synchronized (s) {
                    all.addAll(s);
                }
            }
            return all;
        }

        String summary() {
            return completed() + " requests, per client " + samples.stream().map(List::size).toList() + ", "
                    + failures.size() + " failed";
        }

        void stop() {
            running.set(false);
            for (Thread t : threads) {
                try {
                    if (!t.join(TIMEOUT)) {
                        fail("load client " + t.getName() + " did not stop within " + TIMEOUT.toSeconds() + " s");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            threads.clear();
        }
    }

    // ------------------------------------------------------------------ report

    private record UpdateTiming(ProcboxBuilds.Upgrade upgrade, long firstSeen, long available, int bounces,
            long absentNanos) {
        double availableMillis() {
            return millis(available - upgrade.started());
        }

        double firstSeenMillis() {
            return millis(firstSeen - upgrade.started());
        }
    }

    private static final class Report {
        private final Load load;
        private final List<UpdateTiming> timings;
        private final List<String> broken;
        private final long pumpThreads;
        private final String text;

        Report(Load load, List<UpdateTiming> timings, List<String> broken, long pumpThreads) {
            this.load = load;
            this.timings = timings;
            this.broken = broken;
            this.pumpThreads = pumpThreads;
            this.text = render();
        }

        /** Which update window (1-based) a request overlapped, or 0. */
        private int windowOf(Sample s) {
            for (int i = 0; i < timings.size(); i++) {
                UpdateTiming t = timings.get(i);
                if (s.start() <= t.available() && s.start() + s.nanos() >= t.upgrade().started()) {
                    return i + 1;
                }
            }
            return 0;
        }

        private String render() {
            List<Sample> all = load.allSamples();
            // warm-up: requests started before the first update (first requests of each client, JIT)
            long firstUpdate = timings.isEmpty() ? Long.MAX_VALUE : timings.get(0).upgrade().started();
            List<Sample> run = all.stream().filter(x -> x.start() + x.nanos() >= firstUpdate).toList();
            List<Long> warmUp = sortedNanos(all.stream().filter(x -> x.start() + x.nanos() < firstUpdate).toList());
            List<Long> latencies = sortedNanos(run);
            // requests in flight while an update was between update() and the backend being back for good
            List<Long> during = sortedNanos(run.stream().filter(x -> windowOf(x) > 0).toList());
            List<Long> between = sortedNanos(run.stream().filter(x -> windowOf(x) == 0).toList());
            Sample longest = run.stream().max(java.util.Comparator.comparingLong(Sample::nanos)).orElse(null);
            List<Double> available = timings.stream().map(UpdateTiming::availableMillis).sorted().toList();

            StringBuilder s = new StringBuilder();
            s.append(String.format(Locale.ROOT, "%d procbox sandboxes, each with a background `sleep 600`; %d HTTP clients "
                    + "(`POST /v1/sandboxes/{id}/exec` `true`) and %d SandboxService client(s) running `true` round robin; "
                    + "%d updates of the procbox bundle (`update(newBuild)` + `refreshBundles({procbox})`), %d ms of "
                    + "load between updates; %d cores, Java %s.%n%n", SANDBOXES, HTTP_CLIENTS, SERVICE_CLIENTS, UPDATES,
                    LOAD_BETWEEN_UPDATES.toMillis(), Runtime.getRuntime().availableProcessors(),
                    System.getProperty("java.version")));
            s.append("| measurement | value |\n|---|---|\n");
            s.append(String.format(Locale.ROOT, "| requests | %d |%n", all.size()));
            long unavailable = load.failures().stream().filter(f -> f.contains("HTTP 503") || f.contains("ApiException 503"))
                    .count();
            s.append(String.format(Locale.ROOT, "| failed requests (non-200, exit ≠ 0, exception) | **%d** (of which 503: %d) |%n",
                    load.failures().size(), unavailable));
            s.append(String.format(Locale.ROOT, "| request latency p50 / p99 / max, from the first update on (n=%d) | "
                    + "%.1f / %.1f / %.1f ms |%n", latencies.size(), pct(latencies, 50), pct(latencies, 99), pct(latencies, 100)));
            s.append(String.format(Locale.ROOT, "| … of requests in flight during an update (n=%d) | "
                    + "%.1f / %.1f / %.1f ms |%n", during.size(), pct(during, 50), pct(during, 99), pct(during, 100)));
            s.append(String.format(Locale.ROOT, "| … of requests between updates (n=%d) | "
                    + "%.1f / %.1f / %.1f ms |%n", between.size(), pct(between, 50), pct(between, 99), pct(between, 100)));
            s.append(String.format(Locale.ROOT, "| longest stall (max single request from the first update on) | **%.1f ms** (%s) |%n",
                    pct(latencies, 100), longest == null ? "-" : String.format(Locale.ROOT, "started at t=%.0f ms, %s",
                            millis(longest.start() - load.t0), windowOf(longest) == 0 ? "between updates"
                                    : "during update " + windowOf(longest))));
            s.append(String.format(Locale.ROOT, "| warm-up before the first update: requests, p50 / max | %d, %.1f / %.1f ms |%n",
                    warmUp.size(), pct(warmUp, 50), pct(warmUp, 100)));
            s.append(String.format(Locale.ROOT, "| update() → new version listed by core for good, p50 / max | "
                    + "%.1f / %.1f ms |%n", pctD(available, 50), pctD(available, 100)));
            s.append(String.format(Locale.ROOT, "| procbox exec output-pump threads alive at the end (held open by the "
                    + "background `sleep 600`s) | %d |%n", pumpThreads));
            s.append("\nPer update (times from the `update()` call; \"bounces\" = unregistrations of the procbox "
                    + "SandboxBackend service in that window; \"absent\" = time core listed no procbox):\n\n");
            s.append("| # | version | update() returned | refresh done | new version first listed | listed for good | "
                    + "bounces | absent |\n|---|---|---|---|---|---|---|---|\n");
            int n = 1;
            for (UpdateTiming t : timings) {
                s.append(String.format(Locale.ROOT, "| %d | %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %d | %.1f ms |%n",
                        n++, t.upgrade().version(), t.upgrade().updateMillis(),
                        millis(t.upgrade().refreshed() - t.upgrade().started()), t.firstSeenMillis(),
                        t.availableMillis(), t.bounces(), millis(t.absentNanos())));
            }
            s.append(String.format(Locale.ROOT, "%nUpdate windows (t from the start of the load): %s%n",
                    timings.stream().map(t -> String.format(Locale.ROOT, "%.0f–%.0f ms", millis(t.upgrade().started() - load.t0),
                            millis(t.available() - load.t0))).toList()));
            s.append(broken.isEmpty() ? "\nEvery promise held.\n" : "\nBroken promises:\n\n");
            broken.forEach(b -> s.append("- ").append(b).append('\n'));
            if (!load.failures().isEmpty()) {
                s.append("\nFailed requests:\n\n");
                load.failures().forEach(f -> s.append("- ").append(f.replace('\n', ' ')).append('\n'));
            }
            return s.toString();
        }

        private static List<Long> sortedNanos(List<Sample> samples) {
            return samples.stream().map(Sample::nanos).sorted().toList();
        }

        private static double pct(List<Long> sorted, int p) {
            if (sorted.isEmpty()) {
                return Double.NaN;
            }
            int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
            return millis(sorted.get(Math.max(0, Math.min(sorted.size() - 1, i))));
        }

        private static double pctD(List<Double> sorted, int p) {
            if (sorted.isEmpty()) {
                return Double.NaN;
            }
            int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
            return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
        }
    }
}
