package io.vivarium.state.postgres.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Stored;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.MovedRecords;
import io.vivarium.common.state.PostgresExport;
import io.vivarium.common.state.PostgresUrl;
import io.vivarium.testkit.PostgresDatabase;
import io.vivarium.testkit.StateStoreSuite;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The PostgreSQL store passes the store conformance suite against a real cluster, and imports, leases and fails as docs/state.md says. */
class PostgresStateStoreTest extends StateStoreSuite {
    @RegisterExtension
    static final PostgresDatabase database = new PostgresDatabase();


    static Database database() throws IOException {
        return Database.open(PostgresUrl.parse(database.cluster().url()), 4, Duration.ofSeconds(2), Duration.ofSeconds(5), 1);
    }

    @Override
    protected StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections) throws Exception {
        return PostgresStateStore.open(database(), stateDir, node, collections, StoreEvents.NONE);
    }

    @Test
    void theFirstStartImportsTheFileRecordsOnceInOneTransactionAndMarksTheStateDirectory() throws Exception {
        Path dir = root.resolve("node-a");
        try (FileStateStore files = FileStateStore.open(dir, "node-a", ALL)) {
            files.put(THINGS, "t", new Thing("t", 1), Stored.ABSENT);
            files.put(THINGS, "t", new Thing("t", 2), 1);
            files.put(BOXES, "b", new Box("b"), Stored.ABSENT);
        }

        StateStore store = open();

        assertEquals(new Stored<>("t", new Thing("t", 2), 2, "node-a"), store.get(THINGS, "t").orElseThrow());
        assertEquals(1, store.all(BOXES).size());
        assertEquals("1", database.cluster().psql("SELECT count(*) FROM vivarium_imports WHERE node = 'node-a' AND records = 2"));
        assertTrue(MovedRecords.of(dir).marked());
        assertThrows(IOException.class, () -> FileStateStore.open(dir, "node-a", ALL), "the file store no longer reads them");

        store.put(THINGS, "t", new Thing("t", 3), 2);
        assertEquals(3, open().get(THINGS, "t").orElseThrow().body().size(), "a second start does not import again");
    }

    @Test
    void aRecordOfAnotherNodeInTheStateDirectoryIsNotImported() throws Exception {
        Path dir = root.resolve("node-a");
        try (FileStateStore copied = FileStateStore.open(dir, "node-x", ALL)) {
            copied.put(THINGS, "theirs", new Thing("x", 1), Stored.ABSENT);
        }

        assertEquals(List.of(), open().all(THINGS));
        assertEquals("0", database.cluster().psql("SELECT count(*) FROM vivarium_records"));
    }

    @Test
    void aStartFindsTheMarkMissingAfterACrashBetweenImportAndMarkAndWritesIt() throws Exception {
        Path dir = root.resolve("node-a");
        try (FileStateStore files = FileStateStore.open(dir, "node-a", ALL)) {
            files.put(THINGS, "t", new Thing("t", 1), Stored.ABSENT);
        }
        open();
        MovedRecords.of(dir).clear();

        open();

        assertTrue(MovedRecords.of(dir).marked());
    }

    @Test
    void recordsOfTheNodeThatWereNotImportedFromThisDirectoryStopTheStart() throws Exception {
        open("node-a").put(THINGS, "t", new Thing("t", 1), Stored.ABSENT);
        database.cluster().psql("DELETE FROM vivarium_imports");

        var refused = assertThrows(IOException.class, () -> open("node-a"));
        assertTrue(refused.getMessage().contains("already holds records of node node-a"), refused.getMessage());
    }

    @Test
    void aSecondDaemonOfTheSameNodeCannotStart() throws Exception {
        StateStore first = open();
        var refused = assertThrows(IOException.class,
                () -> PostgresStateStore.open(database(), root.resolve("copy"), "node-a", ALL, StoreEvents.NONE));
        assertTrue(refused.getMessage().contains("node node-a is already served by another daemon"), refused.getMessage());
        first.put(THINGS, "still", new Thing("mine", 1), Stored.ABSENT);
    }

    @Test
    void aDatabaseThatIsAwayIsA503WithRetryAfterAndNothingIsWrittenThenItComesBack() throws Exception {
        java.util.concurrent.atomic.AtomicReference<Boolean> health = new java.util.concurrent.atomic.AtomicReference<>();
        StateStore store = PostgresStateStore.open(database(), root.resolve("node-a"), "node-a", ALL, new StoreEvents() {
            @Override
            public void health(boolean up) {
                health.set(up);
            }
        });
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        assertEquals(Boolean.TRUE, health.get());
        database.cluster().stop();
        try {
            io.vivarium.testkit.Bounded.until(Duration.ofSeconds(15), "the lease check reports the database away",
                    () -> Boolean.FALSE.equals(health.get()));
            ApiException away = assertThrows(ApiException.class, () -> store.put(THINGS, "b", new Thing("b", 1), Stored.ABSENT));
            assertEquals(503, away.status());
            assertEquals(1, away.retryAfterSeconds());
            assertTrue(away.getMessage().startsWith("the state store (PostgreSQL at postgresql://postgres@127.0.0.1:"), away.getMessage());
            assertEquals(1, store.get(THINGS, "a").orElseThrow().revision(), "reads go on from the node's records");
            assertFalse(store.get(THINGS, "b").isPresent());
        } finally {
            database.cluster().startServer();
        }
        io.vivarium.testkit.Bounded.until(Duration.ofSeconds(30), "the store writes again once the database is back", () -> {
            try {
                store.put(THINGS, "b", new Thing("b", 1), Stored.ABSENT);
                return true;
            } catch (ApiException stillAway) {
                return false;
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        io.vivarium.testkit.Bounded.until(Duration.ofSeconds(15), "the lease check reports the database back",
                () -> Boolean.TRUE.equals(health.get()));
        store.close();
        assertEquals(List.of("a", "b"), open().all(THINGS).stream().map(Stored::key).toList());
    }

    @Test
    void anExportBringsTheNodesRecordsBackAsFilesAndTheNextStartOnPostgresImportsThemAgain() throws Exception {
        Path dir = root.resolve("node-a");
        try (FileStateStore files = FileStateStore.open(dir, "node-a", ALL)) {
            files.put(THINGS, "gone-later", new Thing("g", 1), Stored.ABSENT);
            files.put(THINGS, "kept", new Thing("k", 1), Stored.ABSENT);
        }
        StateStore store = open();
        store.deleteIfPresent(THINGS, "gone-later");
        store.put(THINGS, "kept", new Thing("k", 2), 1);
        store.put(BOXES, "new", new Box("n"), Stored.ABSENT);
        open("node-b").put(THINGS, "other", new Thing("b", 1), Stored.ABSENT);
        closeStores();

        int exported;
        try (var c = java.sql.DriverManager.getConnection(PostgresUrl.parse(database.cluster().url()).jdbc(), "postgres", "")) {
            exported = new PostgresExport().export(c, dir, "node-a");
        }

        assertEquals(2, exported);
        assertFalse(MovedRecords.of(dir).marked());
        try (FileStateStore files = FileStateStore.open(dir, "node-a", ALL)) {
            assertEquals(List.of("kept"), files.all(THINGS).stream().map(Stored::key).toList(), "a record deleted on PostgreSQL is gone");
            assertEquals(2, files.get(THINGS, "kept").orElseThrow().body().size());
            assertEquals("n", files.get(BOXES, "new").orElseThrow().body().label());
        }
        assertEquals("0", database.cluster().psql("SELECT count(*) FROM vivarium_records WHERE node = 'node-a'"));
        assertEquals("1", database.cluster().psql("SELECT count(*) FROM vivarium_records WHERE node = 'node-b'"), "other nodes' rows stay");
        assertEquals(2, open().all(THINGS).size() + open().all(BOXES).size(), "the next start on PostgreSQL imports again");
    }

    @Test
    void anExportIsRefusedWhileADaemonOfTheNodeRuns() throws Exception {
        open().put(THINGS, "t", new Thing("t", 1), Stored.ABSENT);
        try (var c = java.sql.DriverManager.getConnection(PostgresUrl.parse(database.cluster().url()).jdbc(), "postgres", "")) {
            var refused = assertThrows(IOException.class, () -> new PostgresExport().export(c, root.resolve("node-a"), "node-a"));
            assertTrue(refused.getMessage().contains("a daemon of node node-a is running"), refused.getMessage());
        }
    }

    @Test
    void thePasswordOfTheUrlIsNeverShown() {
        PostgresUrl url = PostgresUrl.parse("postgresql://vivarium:s3cr%40t@db.example:5433/state?sslmode=require");
        assertEquals("postgresql://vivarium:***@db.example:5433/state", url.toString());
        assertEquals("jdbc:postgresql://db.example:5433/state?sslmode=require", url.jdbc());
        assertEquals("s3cr@t", url.password());
        assertEquals("auth failed for *** here", url.mask("auth failed for s3cr@t here"));
        for (String bad : List.of("", "mysql://x/y", "postgresql://host", "postgresql:///db", "not a url")) {
            assertThrows(IllegalArgumentException.class, () -> PostgresUrl.parse(bad), bad);
        }
    }
}
