package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.state.CommitLocks;
import io.vivarium.common.state.RecordCache;
import io.vivarium.common.testpoints.TestPoints;

/**
 * The store as rows of {@code vivarium_records}, one per record, keyed by this node, the collection
 * and the key. A commit is one database transaction whose every write is compare-and-set on the
 * revision; reads come from a cache of this node's rows loaded at open, which only this daemon
 * writes (its {@link NodeLease} keeps other daemons of the same node off). A commit whose outcome
 * the database never confirmed (it went away mid-commit) makes the next commit reload the cache first.
 */
final class PostgresStateStore implements StateStore {
    private static final System.Logger LOG = System.getLogger(PostgresStateStore.class.getName());

    private final Database db;
    private final NodeLease lease;
    private final String node;
    private final RecordCache cache;
    private final RecordRows rows;
    private final CommitLocks locks;
    /** A commit's outcome is unknown: the cache may miss it. Set and cleared under the exclusive lock, read under any. */
    private volatile boolean uncertain;

    PostgresStateStore(Database db, NodeLease lease, String node, List<RecordCollection<?>> collections, StoreEvents events) {
        this.db = db;
        this.lease = lease;
        this.node = node;
        this.locks = new CommitLocks(events);
        this.cache = new RecordCache(collections);
        this.rows = new RecordRows(node);
    }

    /**
     * Takes {@code node}'s lease, imports its state directory's records if this is the node's first
     * start on the database, and loads its records. Closes {@code db} if it fails.
     */
    static PostgresStateStore open(Database db, Path stateDir, String node, List<RecordCollection<?>> collections,
            StoreEvents events) throws IOException {
        try {
            NodeLease lease = NodeLease.take(db, node, events);
            PostgresStateStore store = new PostgresStateStore(db, lease, node, collections, events);
            try {
                store.describeCollections();
                new FileImport(db).importOnce(stateDir, node, collections);
                store.load();
            } catch (IOException | RuntimeException e) {
                lease.close();
                throw e;
            }
            return store;
        } catch (IOException | RuntimeException e) {
            db.close();
            throw e;
        }
    }

    /** Says which collections this version stores and where files keep them (for an export). */
    void describeCollections() throws IOException {
        try (Connection c = db.connection()) {
            rows.describe(c, cache.collections());
        } catch (SQLException e) {
            throw db.orIo(e, "cannot describe the collections");
        }
    }

    /** Loads this node's records. */
    void load() throws IOException {
        try (Connection c = db.connection()) {
            cache.replaceAll(rows.read(c, cache.collections()));
        } catch (SQLException e) {
            throw db.orIo(e, "cannot read node " + node + "'s records");
        }
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
        try (CommitLocks.Held held = locks.lock(ops, () -> uncertain)) {
            if (uncertain) {
                load();
                uncertain = false;
                LOG.log(Level.INFO, "reloaded node " + node + "'s records after a commit the database did not confirm");
            }
            cache.check(ops);
            write(ops, tx.awaitsDurability());
            cache.apply(ops, node);
        }
    }

    /**
     * Writes {@code ops} in one database transaction. A single write goes as one statement in
     * autocommit, which is its own transaction: one round trip to the server instead of three
     * (begin, write, commit); on a busy host each one waits for the server's backend to be scheduled.
     *
     * @param durable false: the commit returns before the server's WAL is flushed ({@code synchronous_commit} off for it)
     */
    private void write(List<Transaction.Op> ops, boolean durable) throws IOException {
        Connection c;
        try {
            c = db.connection();
        } catch (SQLException e) {
            throw db.orIo(e, "cannot write");
        }
        boolean one = ops.size() == 1;
        boolean sent = false;
        try (c) {
            c.setAutoCommit(one);
            for (int i = 0; i < ops.size(); i++) {
                Transaction.Op op = ops.get(i);
                sent = one; // in autocommit the statement is the commit: once it went out, it may have been applied
                if (rows.write(c, op, !durable && i == 0) == 0) {
                    long stored = rows.revision(c, op);
                    if (!one) {
                        c.rollback();
                    }
                    throw new StaleRevisionException(op.collection().name(), op.key(), op.expected(), stored);
                }
            }
            TestPoints.reach("store.postgres.written"); // a single write is committed by now, more are not yet
            if (!one) {
                sent = true;
                c.commit();
            }
        } catch (SQLException e) {
            if (sent) {
                uncertain = true; // the commit may have been applied: reload before trusting the cache again
            }
            throw db.orIo(e, "cannot write " + ops.size() + " record(s)");
        }
    }

    @Override
    public void close() {
        cache.clear();
        lease.close();
        db.close();
    }
}
