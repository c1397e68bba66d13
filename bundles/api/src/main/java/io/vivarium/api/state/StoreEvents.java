package io.vivarium.api.state;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * What a store tells core as it works, for metrics. Calls come from the threads that commit and
 * must return at once and never throw.
 */
@ConsumerType
public interface StoreEvents {
    /** Tells nothing. */
    StoreEvents NONE = new StoreEvents() {
    };

    /**
     * A commit ended (written or refused).
     *
     * @param waitNanos waited for the store's locks (and a database connection)
     * @param heldNanos from holding them to the end of the commit
     */
    default void committed(long waitNanos, long heldNanos) {
    }

    /** Whether the store can be reached now (a database), told when it changes and at open. */
    default void health(boolean up) {
    }
}
