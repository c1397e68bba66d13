package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link StateStore} does, whatever keeps its records: revisions as compare-and-set,
 * transactions all or nothing, records that outlive the store's instance, and one node never seeing
 * another's records. A store's test extends it and says how to open a store of a node on one
 * shared place (a state directory, a database).
 */
public abstract class StateStoreSuite {
    public record Thing(String name, int size) {
    }

    public record Box(String label) {
    }

    public static final RecordCollection<Thing> THINGS = RecordCollection.of("things", Thing.class, "things/{key}.json");
    public static final RecordCollection<Box> BOXES = RecordCollection.of("boxes", Box.class, "boxes/{key}/box.json");
    public static final List<RecordCollection<?>> ALL = List.of(THINGS, BOXES);

    /** The state directory of node {@code node-a}; {@code node-b}'s is its sibling. */
    @TempDir
    protected Path root;

    private final Map<String, StateStore> opened = new HashMap<>();

    /**
     * A new instance of {@code node}'s store, with {@code stateDir} as its state directory, on the
     * place every call of this test shares; it holds what earlier instances committed. The suite
     * closes the node's earlier instance first (one daemon serves a node at a time).
     */
    protected abstract StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections) throws Exception;

    protected final StateStore open() throws Exception {
        return open("node-a");
    }

    protected final StateStore open(String node) throws Exception {
        StateStore earlier = opened.remove(node);
        if (earlier != null) {
            earlier.close();
        }
        StateStore s = open(root.resolve(node), node, ALL);
        opened.put(node, s);
        return s;
    }

    @AfterEach
    protected final void closeStores() {
        opened.values().forEach(StateStore::close);
        opened.clear();
    }

    @Test
    void aRecordIsStoredWithRevisionAndNodeAndLoadsAgain() throws Exception {
        StateStore store = open();
        Stored<Thing> first = store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        Stored<Thing> second = store.put(THINGS, "a", new Thing("a", 2), 1);

        assertEquals(new Stored<>("a", new Thing("a", 1), 1, "node-a"), first);
        assertEquals(2, second.revision());
        assertEquals(Optional.of(second), store.get(THINGS, "a"));
        assertEquals(Optional.of(new Stored<>("a", new Thing("a", 2), 2, "node-a")), open().get(THINGS, "a"),
                "a new instance reads what the first committed");
    }

    @Test
    void aStaleRevisionFailsAndWritesNothing() throws Exception {
        StateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        var again = assertThrows(StaleRevisionException.class, () -> store.put(THINGS, "a", new Thing("a", 9), Stored.ABSENT));
        assertEquals("things/a: expected revision 0 but the store holds revision 1; nothing was written", again.getMessage());
        assertThrows(StaleRevisionException.class, () -> store.commit(new Transaction().delete(THINGS, "a", 2)));
        assertThrows(StaleRevisionException.class, () -> store.put(THINGS, "b", new Thing("b", 1), 1));

        assertEquals(1, store.get(THINGS, "a").orElseThrow().body().size());
        assertEquals(1, open().get(THINGS, "a").orElseThrow().body().size());
        assertTrue(open().get(THINGS, "b").isEmpty());
    }

    @Test
    void concurrentWritersOfOneRecordEachWinOnceForEveryRevision() throws Exception {
        StateStore store = open();
        store.put(THINGS, "counter", new Thing("counter", 0), Stored.ABSENT);
        int threads = 6;
        int increments = 25;
        List<Thread> writers = new ArrayList<>();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
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
        StateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        Transaction tx = new Transaction().put(BOXES, "x", new Box("new"), Stored.ABSENT).put(THINGS, "a", new Thing("a", 2), 7);
        assertThrows(StaleRevisionException.class, () -> store.commit(tx));

        assertTrue(store.get(BOXES, "x").isEmpty());
        assertTrue(open().get(BOXES, "x").isEmpty());
        assertEquals(1, open().get(THINGS, "a").orElseThrow().revision());
    }

    @Test
    void aTransactionAppliesEveryWriteAcrossCollections() throws Exception {
        StateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        store.commit(new Transaction().put(BOXES, "x", new Box("x"), Stored.ABSENT).delete(THINGS, "a", 1)
                .put(THINGS, "b", new Thing("b", 3), Stored.ABSENT));

        assertEquals(List.of(new Stored<>("x", new Box("x"), 1, "node-a")), store.all(BOXES));
        assertEquals(List.of("b"), store.all(THINGS).stream().map(Stored::key).toList());
        StateStore reopened = open();
        assertEquals(List.of(new Stored<>("x", new Box("x"), 1, "node-a")), reopened.all(BOXES));
        assertEquals(List.of("b"), reopened.all(THINGS).stream().map(Stored::key).toList());
    }

    @Test
    void aTransactionThatDoesNotAwaitTheDiskIsStillCheckedAppliedAndKept() throws Exception {
        StateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);

        Transaction stale = new Transaction().put(THINGS, "a", new Thing("a", 9), 7).withoutAwaitingDurability();
        assertThrows(StaleRevisionException.class, () -> store.commit(stale));
        store.commit(new Transaction().put(THINGS, "a", new Thing("a", 2), 1).withoutAwaitingDurability());
        store.commit(new Transaction().put(BOXES, "x", new Box("x"), Stored.ABSENT).put(THINGS, "b", new Thing("b", 3),
                Stored.ABSENT).withoutAwaitingDurability());

        assertEquals(new Thing("a", 2), store.get(THINGS, "a").orElseThrow().body());
        StateStore reopened = open();
        assertEquals(2, reopened.get(THINGS, "a").orElseThrow().revision(), "kept past the store's close, as a daemon's death");
        assertEquals(new Thing("a", 2), reopened.get(THINGS, "a").orElseThrow().body());
        assertEquals(List.of(new Stored<>("x", new Box("x"), 1, "node-a")), reopened.all(BOXES));
        assertEquals(3, reopened.put(THINGS, "a", new Thing("a", 4), 2).revision(), "and written over as any record");
        reopened.commit(new Transaction().delete(THINGS, "a", 3).withoutAwaitingDurability());
        assertTrue(open().get(THINGS, "a").isEmpty(), "a delete that does not await the disk is kept too");
    }

    @Test
    void aDeletedRecordIsGoneAndCanBeWrittenAnew() throws Exception {
        StateStore store = open();
        store.put(THINGS, "a", new Thing("a", 1), Stored.ABSENT);
        store.deleteIfPresent(THINGS, "a");
        store.deleteIfPresent(THINGS, "a");

        assertTrue(store.get(THINGS, "a").isEmpty());
        StateStore reopened = open();
        assertTrue(reopened.get(THINGS, "a").isEmpty());
        assertEquals(1, reopened.put(THINGS, "a", new Thing("a", 5), Stored.ABSENT).revision());
        assertEquals(5, open().get(THINGS, "a").orElseThrow().body().size());
    }

    /** A delete "whatever its revision" deletes also a record rewritten between its read and its commit. */
    @Test
    void deleteIfPresentWinsOverAWriterThatKeepsRewritingTheRecord() throws Exception {
        StateStore store = open();
        for (int round = 0; round < 20; round++) {
            store.put(THINGS, "busy", new Thing("busy", 0), Stored.ABSENT);
            java.util.concurrent.atomic.AtomicBoolean deleted = new java.util.concurrent.atomic.AtomicBoolean();
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    while (!deleted.get()) {
                        Optional<Stored<Thing>> now = store.get(THINGS, "busy");
                        if (now.isEmpty()) {
                            return;
                        }
                        try {
                            store.put(THINGS, "busy", new Thing("busy", now.get().body().size() + 1), now.get().revision());
                        } catch (StaleRevisionException deletedMeanwhile) {
                            // the delete got in: the next read finds nothing
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            try {
                store.deleteIfPresent(THINGS, "busy");
            } finally {
                deleted.set(true);
                Bounded.join(writer, Duration.ofSeconds(60), "the writer stops");
            }
            assertEquals(List.of(), List.copyOf(failures));
            assertTrue(store.get(THINGS, "busy").isEmpty(), "round " + round + ": the record is gone");
        }
    }

    @Test
    void eachNodeSeesAndWritesOnlyItsOwnRecords() throws Exception {
        StateStore a = open("node-a");
        StateStore b = open("node-b");
        a.put(THINGS, "same", new Thing("a's", 1), Stored.ABSENT);
        b.put(THINGS, "same", new Thing("b's", 1), Stored.ABSENT);
        b.put(THINGS, "only-b", new Thing("b's", 1), Stored.ABSENT);
        a.deleteIfPresent(THINGS, "same");

        assertEquals(List.of(), open("node-a").all(THINGS));
        assertEquals(List.of(new Stored<>("only-b", new Thing("b's", 1), 1, "node-b"),
                new Stored<>("same", new Thing("b's", 1), 1, "node-b")), open("node-b").all(THINGS));
        assertEquals("node-a", a.node());
    }

    @Test
    void keysThatCouldEscapeTheirPlaceAreRefused() {
        for (String bad : List.of("../x", "a/b", ".hidden", "", "x".repeat(201))) {
            assertThrows(IllegalArgumentException.class, () -> new Transaction().put(THINGS, bad, new Thing("t", 1), 0), bad);
        }
    }
}
