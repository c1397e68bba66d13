package io.vivarium.common.state;

import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code vivarium state export}: brings a node's records back from PostgreSQL into its state
 * directory, so that the daemon can start on files again. The files are written in one file-store
 * transaction (the intent journal: all or none), records deleted since the import are removed, the
 * move mark is cleared, and only then are the node's rows and its import row deleted from the
 * database, so a crash anywhere leaves one complete copy to start from. Needs the daemon stopped
 * (its state directory's lock, taken by the caller, and the node's lock in the database).
 */
public final class PostgresExport {
    private final RecordCodec codec = new RecordCodec();

    /** One of the node's rows: its collection, key and body (JSON). */
    private record Row(String collection, String key, String body) {
    }

    /** How many records were written back. */
    public int export(Connection c, Path stateDir, String node) throws IOException, SQLException {
        c.setAutoCommit(false);
        try (PreparedStatement st = c.prepareStatement(NodeLockSql.TRY)) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    throw new IOException("a daemon of node " + node + " is running on this database; stop it first");
                }
            }
        }
        Map<String, RecordCollection<JsonNode>> collections = collections(c);
        List<Row> rows = rows(c, node);
        FileStateStore files = FileStateStore.openEvenIfMoved(stateDir, node, List.copyOf(collections.values()));
        Transaction tx = new Transaction();
        Set<String> kept = new HashSet<>();
        for (Row row : rows) {
            RecordCollection<JsonNode> col = collections.get(row.collection());
            if (col == null) {
                throw new IOException("row " + row.collection() + "/" + row.key() + " names a collection vivarium_collections "
                        + "does not describe; export with the daemon version that wrote it");
            }
            long now = files.get(col, row.key()).map(Stored::revision).orElse(Stored.ABSENT);
            tx.put(col, row.key(), codec.json().readTree(row.body()), now);
            kept.add(col.name() + "/" + row.key());
        }
        for (RecordCollection<JsonNode> col : collections.values()) {
            for (Stored<JsonNode> s : files.all(col)) {
                if (!kept.contains(col.name() + "/" + s.key())) {
                    tx.delete(col, s.key(), s.revision()); // deleted while the node ran on PostgreSQL
                }
            }
        }
        files.commit(tx);
        files.close();
        MovedRecords.of(stateDir).clear();
        for (String table : List.of("vivarium_records", "vivarium_imports")) {
            try (PreparedStatement st = c.prepareStatement("DELETE FROM " + table + " WHERE node = ?")) {
                st.setString(1, node);
                st.executeUpdate();
            }
        }
        c.commit();
        return rows.size();
    }

    private static Map<String, RecordCollection<JsonNode>> collections(Connection c) throws SQLException {
        Map<String, RecordCollection<JsonNode>> collections = new HashMap<>();
        try (PreparedStatement st = c.prepareStatement("SELECT name, schema, layout FROM vivarium_collections");
                ResultSet rs = st.executeQuery()) {
            while (rs.next()) {
                collections.put(rs.getString(1), new RecordCollection<>(rs.getString(1), JsonNode.class, Math.max(1, rs.getInt(2)),
                        (from, body) -> body, rs.getString(3)));
            }
        }
        return collections;
    }

    private static List<Row> rows(Connection c, String node) throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement st = c.prepareStatement("SELECT collection, key, body::text FROM vivarium_records "
                + "WHERE node = ? ORDER BY collection, key FOR UPDATE")) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getString(1), rs.getString(2), rs.getString(3)));
                }
            }
        }
        return rows;
    }
}
