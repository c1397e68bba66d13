package io.vivarium.api.state;

import java.io.IOException;
import java.util.List;
import java.util.Optional;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Core's state: typed collections of records, each stored with a schema version, a revision and
 * the node it lives on. A store holds the records of one node (its host): another node's records
 * in a shared database are neither seen nor written. Reads are served from memory; writes go
 * through {@link #commit}, all or nothing, compare-and-set on each record's revision. Opened by a
 * {@link StateStoreProvider}; every implementation passes testkit's {@code StateStoreSuite}.
 */
@ProviderType
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
     * @throws io.vivarium.api.ApiException 503 with {@code Retry-After} if the store cannot be reached
     *         within a bounded wait (a database that went away); nothing was written
     */
    void commit(Transaction tx) throws IOException;

    /** A put of one record; returns it as stored. */
    default <T> Stored<T> put(RecordCollection<T> c, String key, T body, long expectedRevision) throws IOException {
        commit(new Transaction().put(c, key, body, expectedRevision));
        return new Stored<>(key, body, expectedRevision + 1, node());
    }

    /** Deletes the record if there is one, whatever its revision (one written meanwhile too). */
    default void deleteIfPresent(RecordCollection<?> c, String key) throws IOException {
        while (true) {
            Optional<? extends Stored<?>> now = get(c, key);
            if (now.isEmpty()) {
                return;
            }
            try {
                commit(new Transaction().delete(c, key, now.get().revision()));
                return;
            } catch (StaleRevisionException written) {
                // another writer got in between the read and the delete: delete what it wrote
            }
        }
    }

    @Override
    void close();
}
