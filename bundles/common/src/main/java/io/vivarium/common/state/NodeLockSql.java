package io.vivarium.common.state;

/**
 * The session advisory lock that says a node's records in PostgreSQL are in use: held by the
 * daemon serving the node, tried by an export. Keyed by the node's id.
 */
public final class NodeLockSql {
    /** {@code true} if this session now holds node {@code ?}'s lock. */
    public static final String TRY = "SELECT pg_try_advisory_lock(hashtextextended('vivarium-node:' || ?, 0))";

    private NodeLockSql() {
    }
}
