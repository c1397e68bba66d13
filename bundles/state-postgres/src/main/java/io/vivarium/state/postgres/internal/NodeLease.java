package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.state.StoreEvents;
import io.vivarium.common.state.NodeLockSql;

/**
 * This node's claim on its records: a session advisory lock keyed by the node's id, held on a
 * connection of its own, so that a second daemon with the same node id (the same state directory on
 * another host, or a copy of it) cannot start on the database. Checked every second; when the
 * database went away and came back, taken again. Tells {@link StoreEvents#health} what it saw.
 */
final class NodeLease implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(NodeLease.class.getName());

    private final Database db;
    private final String node;
    private final StoreEvents events;
    private final ScheduledExecutorService checker = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "vivarium-state-lease");
        t.setDaemon(true);
        return t;
    });
    private Connection held;
    private volatile boolean up;

    private NodeLease(Database db, String node, StoreEvents events) {
        this.db = db;
        this.node = node;
        this.events = events;
    }

    /** @throws IOException if another daemon holds this node's lease */
    static NodeLease take(Database db, String node, StoreEvents events) throws IOException {
        NodeLease lease = new NodeLease(db, node, events);
        try {
            if (!lease.tryTake()) {
                throw new IOException("node " + node + " is already served by another daemon on " + db.url()
                        + " (it holds the node's advisory lock); each daemon needs a state directory of its own");
            }
        } catch (SQLException e) {
            throw new IOException("cannot take node " + node + "'s lease in " + db.url() + ": " + db.url().mask(e.getMessage()), e);
        }
        lease.tell(true);
        lease.checker.scheduleWithFixedDelay(lease::check, 1, 1, TimeUnit.SECONDS);
        return lease;
    }

    boolean up() {
        return up;
    }

    private synchronized boolean tryTake() throws SQLException {
        Connection c = db.connection();
        try (PreparedStatement st = c.prepareStatement(NodeLockSql.TRY)) {
            st.setString(1, node);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    c.close();
                    return false;
                }
            }
        } catch (SQLException e) {
            c.close();
            throw e;
        }
        held = c;
        return true;
    }

    private synchronized void check() {
        try {
            if (held != null && held.isValid(1)) {
                tell(true);
                return;
            }
            if (held != null) {
                closeQuietly();
            }
            if (tryTake()) {
                LOG.log(Level.INFO, "the state database " + db.url() + " answers again; node " + node + "'s lease is taken again");
                tell(true);
            } else {
                LOG.log(Level.ERROR, "node " + node + "'s lease in " + db.url() + " is held by another daemon since the "
                        + "database came back; this daemon keeps serving from its records, but two daemons now share a node id");
                tell(true);
            }
        } catch (SQLException e) {
            tell(false);
        } catch (RuntimeException | LinkageError e) {
            // anything else must not end the scheduled check (an uncaught throwable would, silently)
            LOG.log(Level.ERROR, "checking node " + node + "'s lease in " + db.url() + " failed", e);
            tell(false);
        }
    }

    private void tell(boolean now) {
        if (now != up) {
            up = now;
            if (!now) {
                LOG.log(Level.WARNING, "the state database " + db.url() + " cannot be reached; requests that write state answer "
                        + "503 until it is back, running sandboxes go on");
            }
        }
        events.health(now);
    }

    private void closeQuietly() {
        try {
            held.close();
        } catch (SQLException ignored) {
            // the connection is gone with the database: nothing to release
        }
        held = null;
    }

    @Override
    public synchronized void close() {
        checker.shutdownNow();
        if (held != null) {
            closeQuietly();
        }
    }
}
