package io.vivarium.core.internal.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileStateStoreTest {
    record Thing(String name, int size) {
    }

    record Box(String label) {
    }

    static final RecordCollection<Thing> THINGS = RecordCollection.of("things", Thing.class, "things/{key}.json");
    static final RecordCollection<Box> BOXES = RecordCollection.of("boxes", Box.class, "boxes/{key}/box.json");
    static final List<RecordCollection<?>> ALL = List.of(THINGS, BOXES);

    @TempDir
    Path state;

    private FileStateStore open() throws Exception {
        return FileStateStore.open(state, ALL);
    }

    private JsonNode onDisk(String relative) throws Exception {
        return new RecordCodec().json().readTree(state.resolve(relative).toFile());
    }

    @Test
    void aRecordIsStoredInItsEnvelopeWithRevisionAndNodeAndLoadsAgain() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        Stored<Thing> second = store.put(THINGS, "a", new Thing("a", 2), 1);

        assertEquals(2, second.revision());
        JsonNode file = onDisk("things/a.json");
        assertEquals(1, file.get("schema").asInt());
        assertEquals(2, file.get("revision").asLong());
        assertEquals(store.node(), file.get("node").asText());
        assertEquals(2, file.get("body").get("size").asInt());

        FileStateStore reopened = open();
        assertEquals(store.node(), reopened.node(), "the node id is kept in the state directory");
        assertEquals(Optional.of(new Stored<>("a", new Thing("a", 2), 2, store.node())), reopened.get(THINGS, "a"));
    }

    @Test
    void aStaleRevisionFailsAndWritesNothing() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        var again = assertThrows(StaleRevisionException.class, () -> store.put(THINGS, "a", new Thing("a", 9), Stored.ABSENT));
        assertEquals("things/a: expected revision 0 but the store holds revision 1; nothing was written", again.getMessage());
        assertThrows(StaleRevisionException.class, () -> store.commit(new Transaction().delete(THINGS, "a", 2)));
        assertThrows(StaleRevisionException.class, () -> store.put(THINGS, "b", new Thing("b", 1), 1));

        assertEquals(1, store.get(THINGS, "a").orElseThrow().body().size());
        assertEquals(1, onDisk("things/a.json").get("body").get("size").asInt());
        assertTrue(store.get(THINGS, "b").isEmpty());
    }

    @Test
    void concurrentWritersOfOneRecordEachWinOnceForEveryRevision() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "counter", new Thing("counter", 0), Stored.ABSENT);
        int threads = 6;
        int increments = 25;
        List<Thread> writers = new java.util.ArrayList<>();
        java.util.concurrent.ConcurrentLinkedQueue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
        for (int t = 0; t < threads; t++) {
            writers.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int done = 0; done < increments;) {
                        Stored<Thing> now = store.get(THINGS, "counter").orElseThrow();
                        try {
                            store.put(THINGS, "counter", new Thing("counter", now.body().size() + 1), now.revision());
                            done++;
                        } catch (StaleRevisionException lost) {
                            // another writer took this revision: read again
                        }
                        store.put(THINGS, "own-" + Thread.currentThread().threadId() + "-" + done + "-" + now.revision(),
                                new Thing("other", 1), Stored.ABSENT);
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread w : writers) {
            Bounded.join(w, Duration.ofSeconds(60), "a writer ends its " + increments + " increments");
        }
        assertEquals(List.of(), List.copyOf(failures));
        Stored<Thing> counter = open().get(THINGS, "counter").orElseThrow();
        assertEquals(threads * increments, counter.body().size(), "no increment lost");
        assertEquals(threads * increments + 1, counter.revision());
    }

    @Test
    void aTransactionWithOneStaleWriteAppliesNoneOfItsWrites() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        Transaction tx = new Transaction().put(BOXES, "x", new Box("new"), Stored.ABSENT).put(THINGS, "a", new Thing("a", 2), 7);
        assertThrows(StaleRevisionException.class, () -> store.commit(tx));

        assertTrue(store.get(BOXES, "x").isEmpty());
        assertFalse(Files.exists(state.resolve("boxes/x/box.json")));
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)));
    }

    @Test
    void aTransactionAppliesEveryWriteAcrossCollections() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        store.commit(new Transaction().put(BOXES, "x", new Box("x"), Stored.ABSENT).delete(THINGS, "a", 1)
                .put(THINGS, "b", new Thing("b", 3), Stored.ABSENT));

        FileStateStore reopened = open();
        assertEquals(List.of(new Stored<>("x", new Box("x"), 1, store.node())), reopened.all(BOXES));
        assertEquals(List.of("b"), reopened.all(THINGS).stream().map(Stored::key).toList());
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)), "the intent is removed once applied");
    }

    @Test
    void aCompleteIntentLeftByACrashIsReplayedAtStart() throws Exception {
        FileStateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        RecordCodec codec = new RecordCodec();
        // the crash: the intent is durable, none of its writes applied
        new IntentJournal(state.resolve("store"), codec).write(List.of(
                new IntentJournal.Entry("boxes", "x", codec.envelope(BOXES, new Box("x"), 1, store.node())),
                new IntentJournal.Entry("things", "a", null)));

        FileStateStore restarted = open();

        assertEquals("x", restarted.get(BOXES, "x").orElseThrow().body().label());
        assertTrue(restarted.get(THINGS, "a").isEmpty());
        assertFalse(Files.exists(state.resolve("things/a.json")));
        assertFalse(Files.exists(state.resolve("store").resolve(IntentJournal.FILE)));
    }

    @Test
    void anIntentThatIsNotWholeIsDiscardedAtStartAndNothingOfItApplied() throws Exception {
        FileStateStore store = open();
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

        FileStateStore restarted = open();

        assertTrue(restarted.get(BOXES, "x").isEmpty());
        assertEquals(1, restarted.get(THINGS, "a").orElseThrow().revision());
        assertFalse(Files.exists(journal));
        assertFalse(Files.exists(unrenamed));
    }

    @Test
    void anIntentWithAnEntryMissingIsNotWhole() throws Exception {
        FileStateStore store = open();
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
        FileStateStore store = open();
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
        Files.createDirectories(state.resolve("boxes/old"));
        Files.writeString(state.resolve("boxes/old/box.json"), "{\"name\": \"legacy\", \"extra\": true}", StandardCharsets.UTF_8);
        RecordCollection<Box> renamed = new RecordCollection<>("boxes", Box.class, 2, (from, body) -> {
            ObjectNode b = (ObjectNode) body.deepCopy();
            if (from == 0) {
                b.set("label", b.remove("name")); // schema 1 called it label
            } else {
                b.put("label", b.get("label").asText().toUpperCase());
            }
            return b;
        }, "boxes/{key}/box.json");

        FileStateStore store = FileStateStore.open(state, List.of(THINGS, renamed));

        Stored<Box> old = store.get(renamed, "old").orElseThrow();
        assertEquals(new Stored<>("old", new Box("LEGACY"), 1, store.node()), old);
        store.put(renamed, "old", old.body(), old.revision());
        assertEquals(2, onDisk("boxes/old/box.json").get("schema").asInt(), "rewritten in the current schema");
        assertEquals("LEGACY", FileStateStore.open(state, List.of(THINGS, renamed)).get(renamed, "old").orElseThrow()
                .body().label(), "and not upgraded twice");
    }

    @Test
    void aRecordOfANewerSchemaOrUnreadableIsLeftAlone() throws Exception {
        Files.createDirectories(state.resolve("things"));
        Files.writeString(state.resolve("things/new.json"), "{\"schema\": 5, \"revision\": 1, \"node\": \"n\", \"body\": {}}");
        Files.writeString(state.resolve("things/torn.json"), "{\"name\": ");

        FileStateStore store = open();

        assertTrue(store.all(THINGS).isEmpty());
        assertTrue(Files.exists(state.resolve("things/new.json")));
        assertTrue(Files.exists(state.resolve("things/torn.json")));
    }

    @Test
    void keysAndLayoutsThatCouldEscapeTheirDirectoryAreRefused() {
        for (String bad : List.of("../x", "a/b", ".hidden", "", "x".repeat(201))) {
            assertThrows(IllegalArgumentException.class, () -> new Transaction().put(THINGS, bad, new Thing("t", 1), 0), bad);
        }
        for (String layout : List.of("{key}.json", "things/x{key}.json", "things/{key}", "things/{key}/", "a/{key}/{key}.json")) {
            assertThrows(IllegalArgumentException.class, () -> RecordCollection.of("things", Thing.class, layout), layout);
        }
    }
}
