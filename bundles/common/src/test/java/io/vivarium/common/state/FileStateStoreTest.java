package io.vivarium.common.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.HashMap;
import java.util.Map;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.testkit.StateStoreSuite;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.Test;

/** The file store passes the store conformance suite; these are what only files can get wrong: the journal, the layout, the schema. */
class FileStateStoreTest extends StateStoreSuite {
    private Path state;

    @Override
    protected StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections) throws Exception {
        state = stateDir;
        return FileStateStore.open(stateDir, node, collections);
    }

    private FileStateStore store() throws Exception {
        return (FileStateStore) open();
    }

    private JsonNode onDisk(String relative) throws Exception {
        return new RecordCodec().json().readTree(state.resolve(relative).toFile());
    }

    @Test
    void aRecordIsStoredInItsEnvelopeWhereItsLayoutPutsIt() throws Exception {
        FileStateStore store = store();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        Stored<Thing> second = store.put(THINGS, "a", new Thing("a", 2), 1);

        assertEquals(2, second.revision());
        JsonNode file = onDisk("things/a.json");
        assertEquals(1, file.get("schema").asInt());
        assertEquals(2, file.get("revision").asLong());
        assertEquals(store.node(), file.get("node").asText());
        assertEquals(2, file.get("body").get("size").asInt());

    }

    @Test
    void anEmptyRecordFileIsAWriteAPowerLossCutShortAndIsRemovedAtOpen() throws Exception {
        FileStateStore store = store();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        store.put(THINGS, "b", new Thing("b", 1), Stored.ABSENT);
        Files.write(state.resolve("things/b.json"), new byte[0]);

        FileStateStore reopened = store();
        assertTrue(reopened.get(THINGS, "b").isEmpty());
        assertFalse(Files.exists(state.resolve("things/b.json")), "no record is ever empty: the file goes");
        assertEquals(1, reopened.get(THINGS, "a").orElseThrow().revision());
        assertEquals(1, reopened.put(THINGS, "b", new Thing("b", 2), Stored.ABSENT).revision());
    }

    @Test
    void aTransactionLeavesNoIntentBehindWhetherRefusedOrApplied() throws Exception {
        FileStateStore store = store();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        Transaction stale = new Transaction().put(BOXES, "x", new Box("new"), Stored.ABSENT).put(THINGS, "a", new Thing("a", 2), 7);
        assertThrows(StaleRevisionException.class, () -> store.commit(stale));
        assertFalse(Files.exists(state.resolve("boxes/x/box.json")));
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)), "a refused transaction writes no intent");

        store.commit(new Transaction().put(BOXES, "x", new Box("x"), Stored.ABSENT).delete(THINGS, "a", 1));
        assertTrue(Files.exists(state.resolve("boxes/x/box.json")));
        assertFalse(Files.exists(state.resolve("things/a.json")));
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)), "the intent is removed once applied");
    }

    @Test
    void aCompleteIntentLeftByACrashIsReplayedAtStart() throws Exception {
        FileStateStore store = store();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        RecordCodec codec = new RecordCodec();
        // the crash: the intent is durable, none of its writes applied
        new IntentJournal(state.resolve("store"), codec).write(List.of(
                new IntentJournal.Entry("boxes", "x", codec.envelope(BOXES, new Box("x"), 1, store.node())),
                new IntentJournal.Entry("things", "a", null)));

        StateStore restarted = open();

        assertEquals("x", restarted.get(BOXES, "x").orElseThrow().body().label());
        assertTrue(restarted.get(THINGS, "a").isEmpty());
        assertFalse(Files.exists(state.resolve("things/a.json")));
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)));
    }

    @Test
    void anIntentThatIsNotWholeIsDiscardedAtStartAndNothingOfItApplied() throws Exception {
        FileStateStore store = store();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        RecordCodec codec = new RecordCodec();
        Path journal = state.resolve("store").resolve(IntentJournal.FILE);
        new IntentJournal(state.resolve("store"), codec).write(List.of(
                new IntentJournal.Entry("boxes", "x", codec.envelope(BOXES, new Box("x"), 1, store.node())),
                new IntentJournal.Entry("things", "a", null)));
        byte[] whole = Files.readAllBytes(journal);
        Files.write(journal, java.util.Arrays.copyOf(whole, whole.length / 2));
        Path unrenamed = state.resolve("store").resolve("." + IntentJournal.FILE + ".123.tmp");
        Files.write(unrenamed, whole);

        StateStore restarted = open();

        assertTrue(restarted.get(BOXES, "x").isEmpty());
        assertEquals(1, restarted.get(THINGS, "a").orElseThrow().revision());
        assertFalse(Files.exists(journal));
        assertFalse(Files.exists(unrenamed));
    }

    @Test
    void anIntentWithAnEntryMissingIsNotWhole() throws Exception {
        FileStateStore store = store();
        RecordCodec codec = new RecordCodec();
        Path journal = state.resolve("store").resolve(IntentJournal.FILE);
        new IntentJournal(state.resolve("store"), codec).write(List.of(
                new IntentJournal.Entry("boxes", "x", codec.envelope(BOXES, new Box("x"), 1, store.node())),
                new IntentJournal.Entry("boxes", "y", codec.envelope(BOXES, new Box("y"), 1, store.node()))));
        ObjectNode intent = (ObjectNode) codec.json().readTree(journal.toFile());
        ((com.fasterxml.jackson.databind.node.ArrayNode) intent.get("entries")).remove(1);
        Files.write(journal, codec.bytes(intent));

        assertTrue(open().all(BOXES).isEmpty());
    }

    @Test
    void aCommittedIntentThatCouldNotBeAppliedStaysAndIsAppliedLater() throws Exception {
        FileStateStore store = store();
        Files.writeString(state.resolve("boxes"), "in the way"); // boxes/y/box.json cannot be written

        store.commit(new Transaction().put(THINGS, "a", new Thing("a", 1), Stored.ABSENT)
                .put(BOXES, "y", new Box("y"), Stored.ABSENT));

        assertEquals("y", store.get(BOXES, "y").orElseThrow().body().label(), "committed: the intent is durable");
        assertTrue(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)), "and kept until it is applied");
        Files.delete(state.resolve("boxes"));
        store.put(THINGS, "b", new Thing("b", 1), Stored.ABSENT);
        assertEquals("y", onDisk("boxes/y/box.json").get("body").get("label").asText(), "the next commit applied it first");
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)));
    }

    @Test
    void aRecordWrittenBeforeTheEnvelopeIsReadAsSchemaZeroAndUpgraded() throws Exception {
        state = root.resolve("node-a");
        Files.createDirectories(state.resolve("boxes/old"));
        Files.writeString(state.resolve("boxes/old/box.json"), "{\"name\": \"legacy\", \"extra\": true}", StandardCharsets.UTF_8);
        RecordCollection<Box> renamed = new RecordCollection<>("boxes", Box.class, 2, (from, body) -> {
            Map<String, Object> b = new HashMap<>(body);
            if (from == 0) {
                b.put("label", b.remove("name")); // schema 1 called it label
            } else {
                b.put("label", b.get("label").toString().toUpperCase());
            }
            return b;
        }, "boxes/{key}/box.json");

        FileStateStore store = FileStateStore.open(state, "node-a", List.of(THINGS, renamed));

        Stored<Box> old = store.get(renamed, "old").orElseThrow();
        assertEquals(new Stored<>("old", new Box("LEGACY"), 1, store.node()), old);
        store.put(renamed, "old", old.body(), old.revision());
        assertEquals(2, onDisk("boxes/old/box.json").get("schema").asInt(), "rewritten in the current schema");
        assertEquals("LEGACY", FileStateStore.open(state, "node-a", List.of(THINGS, renamed)).get(renamed, "old").orElseThrow()
                .body().label(), "and not upgraded twice");
    }

    @Test
    void aRecordOfANewerSchemaOrUnreadableIsLeftAlone() throws Exception {
        state = root.resolve("node-a");
        Files.createDirectories(state.resolve("things"));
        Files.writeString(state.resolve("things/new.json"), "{\"schema\": 5, \"revision\": 1, \"node\": \"n\", \"body\": {}}");
        Files.writeString(state.resolve("things/torn.json"), "{\"name\": ");

        FileStateStore store = store();

        assertTrue(store.all(THINGS).isEmpty());
        assertTrue(Files.exists(state.resolve("things/new.json")));
        assertTrue(Files.exists(state.resolve("things/torn.json")));
    }

    @Test
    void layoutsThatCouldEscapeTheirDirectoryAreRefused() {
        for (String layout : List.of("{key}.json", "things/x{key}.json", "things/{key}", "things/{key}/", "a/{key}/{key}.json")) {
            assertThrows(IllegalArgumentException.class, () -> RecordCollection.of("things", Thing.class, layout), layout);
        }
    }

    @Test
    void recordsMovedToAnotherStoreAreNotOpenedUntilTheyAreBroughtBack() throws Exception {
        store().put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        MovedRecords.of(state).mark("postgresql://vivarium@db:5432/vivarium", 1);

        var refused = assertThrows(java.io.IOException.class, this::open);
        assertTrue(refused.getMessage().contains("were moved to postgresql://vivarium@db:5432/vivarium"), refused.getMessage());
        assertTrue(refused.getMessage().contains("vivarium state export"), refused.getMessage());
        assertEquals(1, FileStateStore.openEvenIfMoved(state, "node-a", ALL).all(THINGS).size());

        MovedRecords.of(state).clear();
        assertEquals(1, open().all(THINGS).size());
    }
}
