package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
import io.vivarium.common.state.RecordCodec;
import io.vivarium.common.testpoints.TestPoints;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The store as rows of {@code vivarium_records}, one per record, keyed by this node, the collection
 * and the key. A commit is one database transaction whose every write is compare-and-set on the
 * revision; reads come from a cache of this node's rows loaded at open, which only this daemon
 * writes (its {@link NodeLease} keeps other daemons of the same node off). A commit whose outcome
 * the database never confirmed (it went away mid-commit) makes the next commit reload the cache first.
 */
final class PostgresStateStore implements StateStore {
    private static final System.Logger LOG = System.getLogger(PostgresStateStore.class.getName());
    static final String SELECT_NODE = "SELECT collection, key, schema, revision, body::text FROM vivarium_records WHERE node = ?";
    private static final String INSERT = "INSERT INTO vivarium_records (node, collection, key, schema, revision, body, file) "
            + "VALUES (?, ?, ?, ?, ?, ?::jsonb, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE = "UPDATE vivarium_records SET schema = ?, revision = ?, body = ?::jsonb, updated_at = now() "
            + "WHERE node = ? AND collection = ? AND key = ? AND revision = ?";
    private static final String DELETE = "DELETE FROM vivarium_records WHERE node = ? AND collection = ? AND key = ? AND revision = ?";
    private static final String REVISION = "SELECT revision FROM vivarium_records WHERE node = ? AND collection = ? AND key = ?";

    private final Database db;
    private final NodeLease lease;
    private final String node;
    private final RecordCache cache;
    private final RecordCodec codec = new RecordCodec();
    private final CommitLocks locks;
    /** A commit's outcome is unknown: the cache may miss it. Set and cleared under the exclusive lock, read under any. */
    private volatile boolean uncertain;

    PostgresStateStore(Database db, NodeLease lease, String node, List<RecordCollection<?>> collections, StoreEvents events) {
        this.db = db;
        this.lease = lease;
        this.node = node;
        this.locks = new CommitLocks(events);
        this.cache = new RecordCache(collections);
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
        try (Connection c = db.connection(); PreparedStatement st = c.prepareStatement("INSERT INTO vivarium_collections "
                + "(name, schema, layout) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET schema = excluded.schema, "
                + "layout = excluded.layout WHERE vivarium_collections.schema <= excluded.schema")) {
            for (RecordCollection<?> col : cache.collections()) {
                st.setString(1, col.name());
                st.setInt(2, col.schema());
                st.setString(3, col.layout());
                st.addBatch();
            }
            st.executeBatch();
        } catch (SQLException e) {
            throw db.orIo(e, "cannot describe the collections");
        }
    }

    /** Loads this node's records; a row this version cannot read is left alone and logged. */
    void load() throws IOException {
        RecordCache loaded = new RecordCache(cache.collections());
        try (Connection c = db.connection(); PreparedStatement st = c.prepareStatement(SELECT_NODE)) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    RecordCollection<?> col = cache.collection(rs.getString(1)).orElse(null);
                    String key = rs.getString(2);
                    if (col == null) {
                        LOG.log(Level.WARNING, "record " + rs.getString(1) + "/" + key + " belongs to a collection this version "
                                + "does not know; leaving it alone");
                        continue;
                    }
                    try {
                        loaded.put(col, codec.decode(col, key, envelope(rs.getInt(3), rs.getLong(4), rs.getString(5)), node));
                    } catch (IOException | RuntimeException e) {
                        LOG.log(Level.ERROR, "cannot read record " + col.name() + "/" + key + " of node " + node + "; leaving it alone: " + e);
                    }
                }
            }
        } catch (SQLException e) {
            throw db.orIo(e, "cannot read node " + node + "'s records");
        }
        cache.replaceAll(loaded);
    }

    private JsonNode envelope(int schema, long revision, String body) throws IOException {
        ObjectNode e = codec.json().createObjectNode();
        e.put("schema", schema);
        e.put("revision", revision);
        e.put("node", node);
        e.set("body", codec.json().readTree(body));
        return e;
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
            write(ops);
            cache.apply(ops, node);
        }
    }

    private void write(List<Transaction.Op> ops) throws IOException {
        Connection c;
        try {
            c = db.connection();
        } catch (SQLException e) {
            throw db.orIo(e, "cannot write");
        }
        boolean sent = false;
        try (c) {
            c.setAutoCommit(false);
            for (Transaction.Op op : ops) {
                if (apply(c, op) == 0) {
                    long stored = storedRevision(c, op);
                    c.rollback();
                    throw new StaleRevisionException(op.collection().name(), op.key(), op.expected(), stored);
                }
            }
            TestPoints.reach("store.postgres.written");
            sent = true;
            c.commit();
        } catch (SQLException e) {
            if (sent) {
                uncertain = true; // the commit may have been applied: reload before trusting the cache again
            }
            throw db.orIo(e, "cannot write " + ops.size() + " record(s)");
        }
    }

    private int apply(Connection c, Transaction.Op op) throws SQLException, IOException {
        RecordCollection<?> col = op.collection();
        if (op.delete()) {
            try (PreparedStatement st = c.prepareStatement(DELETE)) {
                st.setString(1, node);
                st.setString(2, col.name());
                st.setString(3, op.key());
                st.setLong(4, op.expected());
                return st.executeUpdate();
            }
        }
        String body = codec.json().writeValueAsString(op.body());
        if (op.expected() == Stored.ABSENT) {
            try (PreparedStatement st = c.prepareStatement(INSERT)) {
                st.setString(1, node);
                st.setString(2, col.name());
                st.setString(3, op.key());
                st.setInt(4, col.schema());
                st.setLong(5, 1);
                st.setString(6, body);
                st.setString(7, col.file(op.key()));
                return st.executeUpdate();
            }
        }
        try (PreparedStatement st = c.prepareStatement(UPDATE)) {
            st.setInt(1, col.schema());
            st.setLong(2, op.expected() + 1);
            st.setString(3, body);
            st.setString(4, node);
            st.setString(5, col.name());
            st.setString(6, op.key());
            st.setLong(7, op.expected());
            return st.executeUpdate();
        }
    }

    private long storedRevision(Connection c, Transaction.Op op) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(REVISION)) {
            st.setString(1, node);
            st.setString(2, op.collection().name());
            st.setString(3, op.key());
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getLong(1) : Stored.ABSENT;
            }
        }
    }

    @Override
    public void close() {
        cache.clear();
        lease.close();
        db.close();
    }
}
