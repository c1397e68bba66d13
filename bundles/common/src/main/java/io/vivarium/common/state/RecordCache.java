package io.vivarium.common.state;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

/**
 * A node's records in memory, by collection and key: what a store's reads are served from, kept
 * in step with its commits. Only the collections the store was opened with are known.
 */
public final class RecordCache {
    private final Map<String, RecordCollection<?>> collections = new LinkedHashMap<>();
    private final Map<String, Map<String, Stored<?>>> records = new ConcurrentHashMap<>();

    public RecordCache(List<? extends RecordCollection<?>> collections) {
        for (RecordCollection<?> c : collections) {
            this.collections.put(c.name(), c);
            records.put(c.name(), new ConcurrentHashMap<>());
        }
    }

    /** The collection named {@code name}, if the store was opened with it. */
    public Optional<RecordCollection<?>> collection(String name) {
        return Optional.ofNullable(collections.get(name));
    }

    public List<RecordCollection<?>> collections() {
        return List.copyOf(collections.values());
    }

    @SuppressWarnings("unchecked")
    public <T> Optional<Stored<T>> get(RecordCollection<T> c, String key) {
        return Optional.ofNullable((Stored<T>) of(c).get(key));
    }

    @SuppressWarnings("unchecked")
    public <T> List<Stored<T>> all(RecordCollection<T> c) {
        return of(c).values().stream().map(s -> (Stored<T>) s).sorted(Comparator.comparing(Stored::key)).toList();
    }

    public void put(RecordCollection<?> c, Stored<?> record) {
        of(c).put(record.key(), record);
    }

    /** @throws IllegalArgumentException for a collection the store was not opened with (a caller's bug), before anything is written */
    public void check(List<Transaction.Op> ops) {
        ops.forEach(op -> of(op.collection()));
    }

    /** What {@code ops}, committed by {@code node}, made of the records. */
    public void apply(List<Transaction.Op> ops, String node) {
        for (Transaction.Op op : ops) {
            if (op.delete()) {
                of(op.collection()).remove(op.key());
            } else {
                of(op.collection()).put(op.key(), new Stored<>(op.key(), op.body(), op.expected() + 1, node));
            }
        }
    }

    /** Replaces every record with {@code loaded}'s (a reload from the database). */
    public void replaceAll(RecordCache loaded) {
        loaded.records.forEach((name, byKey) -> {
            records.get(name).clear();
            records.get(name).putAll(byKey);
        });
    }

    public void clear() {
        records.values().forEach(Map::clear);
    }

    private Map<String, Stored<?>> of(RecordCollection<?> c) {
        Map<String, Stored<?>> byKey = records.get(c.name());
        if (byKey == null || !c.equals(collections.get(c.name()))) {
            throw new IllegalArgumentException("collection " + c.name() + " is not one this store was opened with");
        }
        return byKey;
    }
}
