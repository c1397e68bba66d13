package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.Stored;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.MovedRecords;

/**
 * A node's first start on PostgreSQL: the records its state directory holds are copied into the
 * database in one transaction, with a row in {@code vivarium_imports} saying so, then the state
 * directory is marked ({@link MovedRecords}) so that the file store never reads them again. Once
 * a node has its import row, its records live in the database; files beside them are not read.
 */
final class FileImport {
    private static final System.Logger LOG = System.getLogger(FileImport.class.getName());

    private final Database db;

    FileImport(Database db) {
        this.db = db;
    }

    /** @throws IOException if the database already holds records of this node that were not imported from here */
    void importOnce(Path stateDir, String node, List<RecordCollection<?>> collections) throws IOException {
        MovedRecords moved = MovedRecords.of(stateDir);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            Integer imported = importedRecords(c, node);
            if (imported != null) {
                c.rollback();
                if (imported > 0 && !moved.marked()) {
                    moved.mark(db.url().toString(), imported); // the daemon stopped between the import and its mark
                }
                return;
            }
            if (countRecords(c, node) > 0) {
                c.rollback();
                throw new IOException("the state database " + db.url() + " already holds records of node " + node + " that "
                        + "were not imported from " + stateDir + "; start this node on the store that wrote them");
            }
            int n = copy(c, FileStateStore.open(stateDir, node, collections), node, collections);
            try (PreparedStatement st = c.prepareStatement("INSERT INTO vivarium_imports (node, source, records) VALUES (?, ?, ?)")) {
                st.setString(1, node);
                st.setString(2, stateDir.toAbsolutePath().toString());
                st.setInt(3, n);
                st.executeUpdate();
            }
            c.commit();
            if (n > 0) {
                moved.mark(db.url().toString(), n);
                LOG.log(Level.WARNING, "imported " + n + " record(s) of node " + node + " from " + stateDir + " into " + db.url()
                        + " in one transaction; the files are kept as they were and no longer read (" + stateDir
                        + "/store/moved.json marks it; `vivarium state export` brings them back)");
            }
        } catch (SQLException e) {
            throw db.orIo(e, "cannot import node " + node + "'s records");
        }
    }

    private static Integer importedRecords(Connection c, String node) throws SQLException {
        try (PreparedStatement st = c.prepareStatement("SELECT records FROM vivarium_imports WHERE node = ? FOR UPDATE")) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getInt(1) : null;
            }
        }
    }

    private static long countRecords(Connection c, String node) throws SQLException {
        try (PreparedStatement st = c.prepareStatement("SELECT count(*) FROM vivarium_records WHERE node = ?")) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static int copy(Connection c, FileStateStore files, String node, List<RecordCollection<?>> collections)
            throws SQLException, IOException {
        RecordRows rows = new RecordRows(node);
        int n = 0;
        try (files) {
            for (RecordCollection<?> col : collections) {
                for (Stored<?> s : files.all(col)) {
                    if (!s.node().equals(node)) {
                        LOG.log(Level.WARNING, "not importing " + col.name() + "/" + s.key() + ": it lives on node " + s.node()
                                + ", not on this one (" + node + "); the daemon left it alone on files too");
                        continue;
                    }
                    n += rows.insert(c, col, s.key(), s.revision(), s.body());
                }
            }
        }
        return n;
    }
}
