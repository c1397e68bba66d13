package io.vivarium.common.state;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.files.AtomicFiles;

/**
 * The store as files: one JSON envelope per record where its collection's layout puts it, written
 * atomically, and an {@link IntentJournal} in {@code <state>/store/} for transactions of several
 * writes. Commits take {@link CommitLocks}, so writes of different records overlap (their fsyncs are
 * batched by the file system). Reads come from the cache loaded at {@link #open}.
 */
public final class FileStateStore implements StateStore {
    static final String DIR = "store";
    /** Left when the records were moved to another store (PostgreSQL): this store refuses to open beside it. */
    static final String MOVED = "moved.json";
    private static final System.Logger LOG = System.getLogger(FileStateStore.class.getName());

    private final Path stateDir;
    private final String node;
    private final RecordCache cache;
    private final RecordCodec codec = new RecordCodec();
    private final IntentJournal journal;
    private final CommitLocks locks;
    /** A committed intent not yet applied (an I/O error midway); applied before the next commit, which holds the store exclusively. */
    private volatile List<IntentJournal.Entry> pending;

    private FileStateStore(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events) {
        this.stateDir = stateDir;
        this.node = node;
        this.journal = new IntentJournal(stateDir.resolve(DIR), codec);
        this.locks = new CommitLocks(events);
        this.cache = new RecordCache(collections);
    }

    /**
     * Replays or discards what a crash left in the journal, then loads every record of {@code collections}.
     *
     * @throws IOException also when the records were moved to another store ({@link MovedRecords}): a
     *         daemon never starts empty beside records it cannot read
     */
    public static FileStateStore open(Path stateDir, String node, List<RecordCollection<?>> collections) throws IOException {
        return open(stateDir, node, collections, StoreEvents.NONE);
    }

    /** As {@link #open(Path, String, List)}, telling {@code events} of each commit. */
    public static FileStateStore open(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
            throws IOException {
        MovedRecords.of(stateDir).refuseIfMoved();
        return load(stateDir, node, collections, events);
    }

    /** As {@link #open}, also when the records were moved: for bringing them back (an export). */
    public static FileStateStore openEvenIfMoved(Path stateDir, String node, List<RecordCollection<?>> collections)
            throws IOException {
        return load(stateDir, node, collections, StoreEvents.NONE);
    }

    private static FileStateStore load(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
            throws IOException {
        Files.createDirectories(stateDir.resolve(DIR));
        FileStateStore store = new FileStateStore(stateDir, RecordCollection.checkKey(node), collections, events);
        store.recover();
        for (RecordCollection<?> c : collections) {
            store.load(c);
        }
        events.health(true); // files are there as long as the daemon is
        return store;
    }

    @Override
    public String node() {
        return node;
    }

    @Override
    public <T> Optional<Stored<T>> get(RecordCollection<T> c, String key) {
        return cache.get(c, key);
    }

    @Override
    public <T> List<Stored<T>> all(RecordCollection<T> c) {
        return cache.all(c);
    }

    @Override
    public void commit(Transaction tx) throws IOException {
        List<Transaction.Op> ops = tx.ops();
        try (CommitLocks.Held held = locks.lock(ops, () -> pending != null)) {
            applyPending();
            commit(ops, tx.awaitsDurability());
        }
    }

    /**
     * Checks every expected revision, writes (durably if {@code durable}; a transaction of several
     * writes always is, through the journal), then updates the cache.
     */
    private void commit(List<Transaction.Op> ops, boolean durable) throws IOException {
        List<IntentJournal.Entry> entries = new ArrayList<>();
        for (Transaction.Op op : ops) {
            long stored = cache.get(op.collection(), op.key()).map(Stored::revision).orElse(Stored.ABSENT);
            if (stored != op.expected()) {
                throw new StaleRevisionException(op.collection().name(), op.key(), op.expected(), stored);
            }
            entries.add(new IntentJournal.Entry(op.collection().name(), op.key(),
                    op.delete() ? null : codec.envelope(op.collection(), op.body(), op.expected() + 1, node)));
        }
        if (entries.size() == 1) {
            apply(entries, durable);
        } else if (entries.size() > 1) {
            journal.write(entries);
            pending = entries;
            try {
                applyPending();
            } catch (IOException e) {
                LOG.log(Level.ERROR, "a committed transaction is not applied yet; the next commit or start applies it", e);
            }
        }
        cache.apply(ops, node);
    }

    @Override
    public void close() {
        cache.clear();
    }

    private void recover() throws IOException {
        journal.discardUnfinished();
        Optional<List<IntentJournal.Entry>> intent;
        try {
            intent = journal.read();
        } catch (IOException torn) {
            LOG.log(Level.WARNING, "discarding a transaction that did not commit before the daemon stopped (" + torn.getMessage()
                    + "); none of its writes was applied");
            journal.clear();
            return;
        }
        if (intent.isPresent()) {
            apply(intent.get(), true);
            journal.clear();
            LOG.log(Level.WARNING, "replayed a transaction of " + intent.get().size() + " writes the daemon committed "
                    + "but had not finished applying when it stopped");
        }
    }

    private void applyPending() throws IOException {
        if (pending != null) {
            apply(pending, true);
            journal.clear();
            pending = null;
        }
    }

    /** Writes each entry; each write is atomic and the same intent may be applied again. */
    private void apply(List<IntentJournal.Entry> entries, boolean durable) throws IOException {
        for (IntentJournal.Entry e : entries) {
            RecordCollection<?> c = cache.collection(e.collection()).orElse(null);
            if (c == null) {
                LOG.log(Level.ERROR, "the journal names collection " + e.collection() + ", which this version does not know; "
                        + "skipping its write of " + e.key());
                continue;
            }
            Path file = fileOf(c, e.key());
            if (e.delete()) {
                AtomicFiles.delete(file);
            } else {
                ensureDirectory(file.getParent());
                if (durable) {
                    AtomicFiles.write(file, codec.bytes(e.record()));
                } else {
                    AtomicFiles.writeWithoutSync(file, codec.bytes(e.record()));
                }
            }
        }
    }

    private void load(RecordCollection<?> c) throws IOException {
        for (Map.Entry<String, Path> f : files(c).entrySet()) {
            try {
                byte[] bytes = Files.readAllBytes(f.getValue());
                if (bytes.length == 0) {
                    // no record is ever empty: a write that did not await the disk, whose rename the
                    // power cut before its data (Transaction#withoutAwaitingDurability); there is none
                    AtomicFiles.delete(f.getValue());
                    LOG.log(Level.WARNING, "removed the empty record " + f.getValue() + ", a write the host's crash cut short");
                    continue;
                }
                cache.put(c, codec.decode(c, f.getKey(), bytes, node));
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.ERROR, "cannot read record " + f.getValue() + "; leaving it alone: " + e);
            }
        }
    }

    /** The files of a collection by key, found by its layout. */
    private Map<String, Path> files(RecordCollection<?> c) throws IOException {
        int at = c.layout().indexOf(RecordCollection.KEY);
        Path base = stateDir.resolve(c.layout().substring(0, at));
        String after = c.layout().substring(at + RecordCollection.KEY.length());
        Map<String, Path> files = new LinkedHashMap<>();
        if (!Files.isDirectory(base)) {
            return files;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(base)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                String key = after.startsWith("/") ? name
                        : name.endsWith(after) ? name.substring(0, name.length() - after.length()) : null;
                Path file = after.startsWith("/") ? p.resolve(after.substring(1)) : p;
                if (key != null && RecordCollection.isKey(key) && Files.isRegularFile(file)) {
                    files.put(key, file);
                }
            }
        }
        return files;
    }

    private Path fileOf(RecordCollection<?> c, String key) {
        return stateDir.resolve(c.file(key));
    }

    private static void ensureDirectory(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir);
            AtomicFiles.fsyncDirectory(dir.getParent());
        }
    }
}
