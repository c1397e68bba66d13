package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * procbox replaced the two ways operators do it, while clients exec against live sandboxes: new
 * builds dropped into the deploy folder (and the jar removed again), then new builds sent with
 * {@code PUT /v1/plugins/io.vivarium.backend-procbox}. Fails on any failed request, on a second
 * procbox appearing beside the first, and on any sandbox that is not the same afterwards: same id,
 * same init process, its background process still running.
 */
class HotSwapUnderLoadIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String PROCBOX = "io.vivarium.backend-procbox";
    private static final String JAR = "backend-procbox.jar";
    private static final String BACKGROUND = "sleep 600";
    private static final int SANDBOXES = 4;
    private static final int CLIENTS = 3;
    private static final Duration SWAP = Duration.ofSeconds(20);

    /** A sandbox as it must stay: its init and the host pid of its background process. */
    private record Live(String id, long initPid, long backgroundPid) {
    }

    @TempDir
    static Path dir;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void procboxIsReplacedThroughTheDeployFolderAndThroughPutWhileClientsExecAndNoSandboxIsLost() throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        Daemon daemon = daemons.start(dir.resolve("state"), deploy.daemonArgs());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String shippedVersion = procbox(api).get("version").asText();
        List<Live> sandboxes = new ArrayList<>();
        for (int i = 0; i < SANDBOXES; i++) {
            String id = api.createSandbox();
            api.exec(id, "sh", "-c", BACKGROUND + " > /dev/null 2>&1 &");
            long init = api.get("/v1/sandboxes/" + id).body().get("pid").asLong();
            sandboxes.add(new Live(id, init, HostProcesses.theDescendant(init, BACKGROUND)));
        }

        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        AtomicLong done = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger next = new AtomicInteger();
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            Thread t = new Thread(() -> {
                while (running.get()) {
                    String id = sandboxes.get(Math.floorMod(next.getAndIncrement(), SANDBOXES)).id();
                    try {
                        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", "{\"args\":[\"true\"]}");
                        if (r.status() != 200 || r.body().get("exit_code").asInt() != 0) {
                            failures.add(id + ": " + r.status() + " " + r.raw().body());
                        }
                    } catch (Exception e) {
                        failures.add(id + ": " + e);
                    }
                    done.incrementAndGet();
                }
            }, "exec-client-" + c);
            t.start();
            clients.add(t);
        }
        Path shipped = BundleJars.shipped("backend-procbox");
        try {
            for (int i = 1; i <= 2; i++) {
                String version = "0.1.0.deploy" + i;
                Path jar = Files.write(dir.resolve("procbox-" + version + ".jar"), BundleJars.withVersion(shipped, version));
                swapUnderLoad(api, done, version, () -> deploy.deploy(jar, JAR));
            }
            swapUnderLoad(api, done, shippedVersion, () -> deploy.remove(JAR));
            for (int i = 1; i <= 3; i++) {
                String version = "0.1.0.put" + i;
                byte[] jar = BundleJars.withVersion(shipped, version);
                swapUnderLoad(api, done, version, () -> {
                    Api.Response r = api.sendBytes("PUT", "/v1/plugins/" + PROCBOX, jar);
                    assertEquals(200, r.status(), r.raw().body());
                });
            }
        } finally {
            running.set(false);
            for (Thread t : clients) {
                Bounded.join(t, Duration.ofSeconds(60), "a client ends once told to");
            }
        }
        assertEquals(List.of(), failures, "every exec during the swaps succeeds (" + done.get() + " sent)");

        for (Live sb : sandboxes) {
            JsonNode now = api.get("/v1/sandboxes/" + sb.id()).body();
            assertEquals("running", now.get("status").asText(), now.toString());
            assertEquals(sb.initPid(), now.get("pid").asLong(), "the same init process in " + sb.id());
            assertTrue(HostProcesses.runs(sb.backgroundPid(), BACKGROUND), "the background process of " + sb.id() + " runs");
            assertEquals(List.of(sb.backgroundPid()), HostProcesses.descendants(sb.initPid(), BACKGROUND), sb.id());
            assertEquals(204, api.delete("/v1/sandboxes/" + sb.id()).status());
        }
    }

    @Test
    void aProcboxJarLeftInTheDeployFolderReplacesTheShippedOneAtTheNextStart() throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy-at-start")));
        Path jar = Files.write(dir.resolve("procbox-at-start.jar"),
                BundleJars.withVersion(BundleJars.shipped("backend-procbox"), "0.1.0.atstart"));
        deploy.deploy(jar, JAR);
        Daemon daemon = daemons.start(dir.resolve("state-at-start"), deploy.daemonArgs());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        theOneProcboxIs(api, "0.1.0.atstart");
    }

    private interface Swap {
        void run() throws Exception;
    }

    /** Swaps procbox, waits for the new one, and for the clients' requests after it: every swap is under load. */
    private static void swapUnderLoad(Api api, AtomicLong done, String version, Swap swap) throws Exception {
        DeployFolder.await("clients running", SWAP, () -> done.get() > 0 ? true : null);
        swap.run();
        theOneProcboxIs(api, version);
        long after = done.get();
        DeployFolder.await("execs after procbox " + version + " arrived", SWAP, () -> done.get() >= after + CLIENTS ? true : null);
    }

    /** Waits until {@code version} is the backend procbox, then checks it is the feature's one bundle (never a second). */
    private static void theOneProcboxIs(Api api, String version) throws Exception {
        DeployFolder.await("procbox " + version + " in /v1/backends", SWAP, () -> {
            JsonNode b = procbox(api);
            return b != null && b.get("version").asText().equals(version) && b.get("available").asBoolean() ? b : null;
        });
        List<JsonNode> bundles = new ArrayList<>();
        api.get("/v1/plugins").body().forEach(p -> {
            if (p.get("symbolic_name").asText().equals(PROCBOX)) {
                bundles.add(p);
            }
        });
        assertEquals(1, bundles.size(), "one procbox bundle: " + bundles);
        assertEquals(version, bundles.get(0).get("version").asText());
        assertTrue(bundles.get(0).get("location").asText().contains("/system/"), "the feature's bundle, replaced: " + bundles);
    }

    /** The one procbox entry of /v1/backends; null while it is away, a failure if there are two. */
    private static JsonNode procbox(Api api) throws Exception {
        List<JsonNode> found = new ArrayList<>();
        Api.Response r = api.get("/v1/backends");
        assertEquals(200, r.status(), r.raw().body());
        r.body().forEach(b -> {
            if (b.get("name").asText().equals("procbox")) {
                found.add(b);
            }
        });
        assertTrue(found.size() <= 1, "two procbox backends: " + found);
        return found.isEmpty() ? null : found.get(0);
    }
}
