package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.state.RecordCache;
import io.vivarium.common.state.RecordCodec;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One node's rows of {@code vivarium_records} (and the collections' description beside them), as
 * SQL: reading them into records, and each write of a transaction as one compare-and-set statement
 * on the revision, on the connection of the caller's database transaction.
 */
final class RecordRows {
    private static final System.Logger LOG = System.getLogger(RecordRows.class.getName());
    private static final String SELECT = "SELECT collection, key, schema, revision, body::text FROM vivarium_records WHERE node = ?";
    private static final String INSERT = "INSERT INTO vivarium_records (node, collection, key, schema, revision, body, file) "
            + "VALUES (?, ?, ?, ?, ?, ?::jsonb, ?) ON CONFLICT DO NOTHING";
    private static final String UPDATE = "UPDATE vivarium_records SET schema = ?, revision = ?, body = ?::jsonb, updated_at = now() "
            + "WHERE node = ? AND collection = ? AND key = ? AND revision = ?";
    private static final String DELETE = "DELETE FROM vivarium_records WHERE node = ? AND collection = ? AND key = ? AND revision = ?";
    /** Put before a write: its transaction's commit does not wait for the WAL to be flushed. */
    private static final String RELAXED = "SELECT set_config('synchronous_commit', 'off', true); ";
    private static final String REVISION = "SELECT revision FROM vivarium_records WHERE node = ? AND collection = ? AND key = ?";
    private static final String DESCRIBE = "INSERT INTO vivarium_collections (name, schema, layout) VALUES (?, ?, ?) "
            + "ON CONFLICT (name) DO UPDATE SET schema = excluded.schema, layout = excluded.layout "
            + "WHERE vivarium_collections.schema <= excluded.schema";

    private final String node;
    private final RecordCodec codec = new RecordCodec();

    RecordRows(String node) {
        this.node = node;
    }

    /** Says which collections this version stores and where files keep them (for an export). */
    void describe(Connection c, List<RecordCollection<?>> collections) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(DESCRIBE)) {
            for (RecordCollection<?> col : collections) {
                st.setString(1, col.name());
                st.setInt(2, col.schema());
                st.setString(3, col.layout());
                st.addBatch();
            }
            st.executeBatch();
        }
    }

    /** The node's records of {@code collections}; a row this version cannot read is left alone and logged. */
    RecordCache read(Connection c, List<RecordCollection<?>> collections) throws SQLException {
        RecordCache records = new RecordCache(collections);
        try (PreparedStatement st = c.prepareStatement(SELECT)) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    RecordCollection<?> col = records.collection(rs.getString(1)).orElse(null);
                    String key = rs.getString(2);
                    if (col == null) {
                        LOG.log(Level.WARNING, "record " + rs.getString(1) + "/" + key + " belongs to a collection this version "
                                + "does not know; leaving it alone");
                        continue;
                    }
                    try {
                        ObjectNode envelope = codec.json().createObjectNode().put("schema", rs.getInt(3)).put("revision", rs.getLong(4))
                                .put("node", node);
                        envelope.set("body", codec.json().readTree(rs.getString(5)));
                        records.put(col, codec.decode(col, key, envelope, node));
                    } catch (IOException | RuntimeException e) {
                        LOG.log(Level.ERROR, "cannot read record " + col.name() + "/" + key + " of node " + node + "; leaving it alone: " + e);
                    }
                }
            }
        }
        return records;
    }

    /**
     * Applies {@code op} if its record is at the revision it expects: the number of rows it wrote (0:
     * stale). {@code relaxed}: the statement first turns {@code synchronous_commit} off for the rest of
     * its transaction, in the same round trip ({@code set_config} with {@code is_local}; {@code SET
     * LOCAL} would warn in the implicit transaction of an autocommit statement).
     */
    int write(Connection c, Transaction.Op op, boolean relaxed) throws SQLException, IOException {
        RecordCollection<?> col = op.collection();
        if (op.delete()) {
            try (PreparedStatement st = c.prepareStatement(relaxed ? RELAXED + DELETE : DELETE)) {
                st.setString(1, node);
                st.setString(2, col.name());
                st.setString(3, op.key());
                st.setLong(4, op.expected());
                return rowsWritten(st, relaxed);
            }
        }
        if (op.expected() == Stored.ABSENT) {
            return insert(c, col, op.key(), 1, op.body(), relaxed);
        }
        try (PreparedStatement st = c.prepareStatement(relaxed ? RELAXED + UPDATE : UPDATE)) {
            st.setInt(1, col.schema());
            st.setLong(2, op.expected() + 1);
            st.setString(3, codec.json().writeValueAsString(op.body()));
            st.setString(4, node);
            st.setString(5, col.name());
            st.setString(6, op.key());
            st.setLong(7, op.expected());
            return rowsWritten(st, relaxed);
        }
    }

    /** Inserts a record at {@code revision} unless the node has one of that key: the rows written (0 or 1). */
    int insert(Connection c, RecordCollection<?> col, String key, long revision, Object body) throws SQLException, IOException {
        return insert(c, col, key, revision, body, false);
    }

    private int insert(Connection c, RecordCollection<?> col, String key, long revision, Object body, boolean relaxed)
            throws SQLException, IOException {
        try (PreparedStatement st = c.prepareStatement(relaxed ? RELAXED + INSERT : INSERT)) {
            st.setString(1, node);
            st.setString(2, col.name());
            st.setString(3, key);
            st.setInt(4, col.schema());
            st.setLong(5, revision);
            st.setString(6, codec.json().writeValueAsString(body));
            st.setString(7, col.file(key));
            return rowsWritten(st, relaxed);
        }
    }

    /** Runs a write, after the {@link #RELAXED} select when it begins with one: the rows it wrote. */
    private static int rowsWritten(PreparedStatement st, boolean relaxed) throws SQLException {
        if (!relaxed) {
            return st.executeUpdate();
        }
        st.execute();
        st.getMoreResults();
        return st.getUpdateCount();
    }

    /** The revision the node's record holds, or {@link Stored#ABSENT}. */
    long revision(Connection c, Transaction.Op op) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(REVISION)) {
            st.setString(1, node);
            st.setString(2, op.collection().name());
            st.setString(3, op.key());
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getLong(1) : Stored.ABSENT;
            }
        }
    }
}
