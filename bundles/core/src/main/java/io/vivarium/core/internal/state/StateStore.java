package io.vivarium.core.internal.state;

import java.io.IOException;
import java.util.List;
import java.util.Optional;

/**
 * Core's state: typed collections of records, each stored with a schema version, a revision and
 * the node it lives on. Reads are served from memory; writes go through {@link #commit}, all or
 * nothing, compare-and-set on each record's revision. {@link FileStateStore} is the implementation
 * today; a database one can replace it without callers noticing (docs/architecture.md).
 */
public interface StateStore extends AutoCloseable {

    /** The id of the node this store writes for, stable across restarts. */
    String node();

    <T> Optional<Stored<T>> get(RecordCollection<T> c, String key);

    /** Every record of the collection, by key. */
    <T> List<Stored<T>> all(RecordCollection<T> c);

    /**
     * Applies every operation or none.
     *
     * @throws StaleRevisionException if a record is not at the revision its operation expects;
     *         nothing was written
     * @throws IOException if the transaction could not be made durable; nothing was written
     */
    void commit(Transaction tx) throws IOException;

    /** A put of one record; returns it as stored. */
    default <T> Stored<T> put(RecordCollection<T> c, String key, T body, long expectedRevision) throws IOException {
        commit(new Transaction().put(c, key, body, expectedRevision));
        return new Stored<>(key, body, expectedRevision + 1, node());
    }

    /** Deletes the record if there is one, whatever its revision. */
    default void deleteIfPresent(RecordCollection<?> c, String key) throws IOException {
        Optional<? extends Stored<?>> now = get(c, key);
        if (now.isPresent()) {
            commit(new Transaction().delete(c, key, now.get().revision()));
        }
    }

    @Override
    void close();
}
