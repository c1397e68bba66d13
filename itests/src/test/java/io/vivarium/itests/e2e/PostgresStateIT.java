package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.PostgresDatabase;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The assembled daemon on PostgreSQL (a throwaway cluster): two daemons sharing one database never
 * touch each other's sandboxes; a database that goes away answers 503 with Retry-After while running
 * sandboxes go on, and the daemon writes again once it is back; a state directory's records are
 * imported once; the URL's password shows nowhere.
 */
class PostgresStateIT {
    private static final String PASSWORD = "pw-never-shown-4711";
    private static final String FEATURES = "core,api-v1,procbox,fingerprint-sha256,storage-reflink,metrics,state-postgres";

    @RegisterExtension
    static final PostgresDatabase database = new PostgresDatabase();

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path tmp;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    /** The URL with a password (trust authentication ignores it), to prove it is never shown. */
    private static String url() {
        return database.cluster().url().replace("postgres@", "postgres:" + PASSWORD + "@");
    }

    private Daemon onPostgres(Path state) throws Exception {
        return daemons.start(state, List.of("--features", FEATURES, "--state-url", url()));
    }

    private static Set<String> ids(Api api) throws Exception {
        Set<String> ids = new TreeSet<>();
        for (JsonNode s : Api.expect(200, api.get("/v1/sandboxes"))) {
            ids.add(s.get("id").asText());
        }
        return ids;
    }

    private static long rows(String node) throws Exception {
        return Long.parseLong(database.cluster().psql("SELECT count(*) FROM vivarium_records WHERE collection = 'sandboxes' AND node = '"
                + node + "'"));
    }

    private static String node(Daemon d) throws Exception {
        return Files.readString(d.stateDir().resolve("store/node")).strip();
    }

    @Test
    void twoDaemonsOnOneDatabaseCreateAndDeleteSideBySideAndNeverTouchEachOthersSandboxes() throws Exception {
        Daemon a = onPostgres(tmp.resolve("a"));
        Daemon b = onPostgres(tmp.resolve("b"));
        Api apiA = new Api(a.baseUrl(), a.adminToken());
        Api apiB = new Api(b.baseUrl(), b.adminToken());
        List<String> madeA = new ArrayList<>();
        List<String> madeB = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread inB = Thread.ofPlatform().start(() -> {
            try {
                for (int i = 0; i < 4; i++) {
                    madeB.add(apiB.createSandbox());
                }
                Api.expect(204, apiB.delete("/v1/sandboxes/" + madeB.remove(0)));
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        for (int i = 0; i < 4; i++) {
            madeA.add(apiA.createSandbox());
        }
        Api.expect(204, apiA.delete("/v1/sandboxes/" + madeA.remove(0)));
        Bounded.join(inB, Duration.ofSeconds(120), "the second daemon's creates and delete");
        assertEquals(null, failed.get());

        assertEquals(new TreeSet<>(madeA), ids(apiA));
        assertEquals(new TreeSet<>(madeB), ids(apiB));
        assertEquals(404, apiA.get("/v1/sandboxes/" + madeB.get(0)).status(), "a sandbox of the other daemon is not found");
        assertEquals(3, rows(node(a)));
        assertEquals(3, rows(node(b)));
        assertNotEquals(node(a), node(b));
        assertEquals("hi\n", Api.sh(apiB, madeB.get(0), "echo hi"));

        a.stop();
        Daemon again = onPostgres(tmp.resolve("a"));
        Api apiAgain = new Api(again.baseUrl(), again.adminToken());
        assertEquals(new TreeSet<>(madeA), ids(apiAgain), "a restart adopts its own sandboxes from the database");
        assertEquals("running", apiAgain.get("/v1/sandboxes/" + madeA.get(0)).body().get("status").asText());
        assertEquals(new TreeSet<>(madeB), ids(apiB), "and leaves the other daemon's alone");

        for (Daemon d : List.of(again, b)) {
            assertTrue(d.output().stream().noneMatch(l -> l.contains(PASSWORD)), "the password is not in the daemon's output");
        }
        assertFalse(apiB.get("/v1/features").raw().body().contains(PASSWORD));
        assertTrue(b.output().stream().anyMatch(l -> l.contains("PostgreSQL at postgresql://postgres:***@127.0.0.1:")));
    }

    @Test
    void aDatabaseThatGoesAwayIsA503WithRetryAfterWhileSandboxesRunAndTheDaemonWritesAgainWhenItIsBack() throws Exception {
        Daemon d = onPostgres(tmp.resolve("d"));
        Api api = new Api(d.baseUrl(), d.adminToken());
        String running = api.createSandbox();
        String doomed = api.createSandbox();

        database.cluster().stop();
        try {
            long start = System.nanoTime();
            Api.Response create = api.post("/v1/sandboxes", java.util.Map.of());
            assertEquals(503, create.status(), create.raw().body());
            assertTrue(create.raw().headers().firstValue("Retry-After").isPresent());
            assertTrue(create.body().get("error").asText().contains("cannot be reached"), create.raw().body());
            assertFalse(create.raw().body().contains(PASSWORD));
            assertTrue(Duration.ofNanos(System.nanoTime() - start).compareTo(Duration.ofSeconds(30)) < 0,
                    "a bounded wait, never a hang");
            assertEquals(503, api.delete("/v1/sandboxes/" + doomed).status());
            assertEquals("still\n", Api.sh(api, running, "echo still"), "execs in running sandboxes go on");
            assertEquals(Set.of(running, doomed), ids(api), "the sandbox whose delete answered 503 is kept, to be deleted again");
        } finally {
            database.cluster().startServer();
        }

        Bounded.until(Duration.ofSeconds(30), "the daemon writes again once the database is back", () -> {
            try {
                return api.delete("/v1/sandboxes/" + doomed).status() == 204;
            } catch (Exception e) {
                return false;
            }
        });
        String after = api.createSandbox();
        assertEquals(Set.of(running, after), ids(api));
        assertEquals(2, rows(node(d)), "nothing lost or duplicated: one row per sandbox");
        Api.Response metrics = api.get("/metrics");
        assertEquals(200, metrics.status(), metrics.raw().body());
        assertTrue(metrics.raw().body().contains("vivarium_store_lock_held_seconds_count{store=\"postgres\"}"),
                () -> "the store's commit timings are exported; /metrics said (buckets left out):\n"
                        + metrics.raw().body().lines().filter(l -> !l.contains("_bucket{") && !l.startsWith("#"))
                                .collect(java.util.stream.Collectors.joining("\n"))
                        + "\nthe daemon said:\n" + String.join("\n", d.output()));
    }

    @Test
    void aKill9RightAfterACreatesFirstRecordLeavesNoSandboxBehind() throws Exception {
        Path state = tmp.resolve("k");
        // the first commit is a create's first record, one write: its own transaction, committed when the daemon dies
        Daemon dying = daemons.start(state, List.of("--features", FEATURES, "--state-url", url()),
                List.of("-Dvivarium.test.halt.at=store.postgres.written#1"));
        Api api = new Api(dying.baseUrl(), dying.adminToken());
        assertThrows(java.io.IOException.class, () -> api.post("/v1/sandboxes", java.util.Map.of()));
        assertTrue(dying.awaitExit(Duration.ofSeconds(30)), "the daemon halted at the test point");
        Bounded.until(Duration.ofSeconds(30), "PostgreSQL ends the dead daemon's session", () -> {
            try {
                return database.cluster().psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'vivarium'").equals("0");
            } catch (Exception e) {
                return false;
            }
        });
        assertEquals(1, rows(node(dying)), "the create's first record, which names what a start cleans up");

        Daemon again = onPostgres(state);
        Api apiAgain = new Api(again.baseUrl(), again.adminToken());
        assertEquals(Set.of(), ids(apiAgain));
        assertEquals(0, rows(node(again)), "the start removed the unfinished create's record");
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(List.of(), dirs.toList(), "the create's directory, without a record, is removed at start");
        }
        String id = apiAgain.createSandbox();
        assertEquals(Set.of(id), ids(apiAgain), "and the node writes again, its lease taken over from the dead session");
    }

    @Test
    void theFirstStartOnPostgresImportsTheStateDirectoryTheFileStoreRefusesItUntilAnExportBringsItBack() throws Exception {
        Path state = tmp.resolve("i");
        String kept;
        {
            Daemon files = daemons.start(state, List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
            kept = new Api(files.baseUrl(), files.adminToken()).createSandbox();
            assertEquals(0, files.stop());
        }
        {
            Daemon pg = onPostgres(state);
            Api api = new Api(pg.baseUrl(), pg.adminToken());
            assertEquals(Set.of(kept), ids(api));
            assertEquals("running", api.get("/v1/sandboxes/" + kept).body().get("status").asText());
            assertTrue(pg.output().stream().anyMatch(l -> l.contains("imported 1 record(s) of node")), "the import says so");
            assertTrue(Files.exists(state.resolve("store/moved.json")));
            assertEquals(0, pg.stop());
        }
        Daemon back = daemons.start(state, List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
        back.awaitOutput("were moved to postgresql://postgres:***@127.0.0.1:", Duration.ofSeconds(30));
        Api.Response list = new Api(back.baseUrl(), back.adminToken()).get("/v1/sandboxes");
        assertEquals(503, list.status(), "the file store does not start empty beside records it cannot read, and the API says"
                + " it is not up: " + list.body());
        back.stop();

        Bounded.Ran export = Bounded.run(Duration.ofSeconds(60), Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", Daemon.distribution().resolve("lib") + "/*", "io.vivarium.launcher.Main", "state", "export",
                "--state", state.toString(), "--state-url", url());
        assertEquals(0, export.exitCode(), export.output());
        assertTrue(export.output().contains("exported 1 record(s) of node"), export.output());
        assertFalse(export.output().contains(PASSWORD), export.output());

        Daemon files = daemons.start(state, List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
        Api api = new Api(files.baseUrl(), files.adminToken());
        assertEquals("running", api.get("/v1/sandboxes/" + kept).body().get("status").asText(),
                "after the export the file store starts with the sandbox, still running");
        Api.expect(204, api.delete("/v1/sandboxes/" + kept));
    }
}
