package io.vivarium.api;

/**
 * What a token may do, each role everything the one before it may: {@link #USER} manages its
 * tenant's sandboxes, {@link #ADMIN} also reaches into them, {@link #OPERATOR} also administers
 * the daemon for every tenant; {@link #NODE} stands apart.
 */
public enum Role {
    /** Creates, lists, pauses, touches and deletes its tenant's sandboxes. */
    USER,
    /** Also reaches into its tenant's sandboxes: exec, eval, files, change-sets, checkpoints, branches. */
    ADMIN,
    /**
     * Also administers the daemon, for every tenant: plugin bundles (code that runs inside the
     * daemon) and features; later templates, nodes and policy bounds. Since 2.0.
     */
    OPERATOR,
    /**
     * A fleet node that dials its master (pull mode): it may use the routes that need this role
     * (registration, the long poll, posting answers) and nothing else, and no other role may use
     * those. Outside the order of the three above. Since 2.1.
     */
    NODE;

    /** Whether a caller of this role may use a route that needs {@code required}. */
    public boolean allows(Role required) {
        if (this == NODE || required == NODE) {
            return this == required;
        }
        return compareTo(required) >= 0;
    }
}
