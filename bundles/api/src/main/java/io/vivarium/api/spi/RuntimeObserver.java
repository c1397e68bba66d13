package io.vivarium.api.spi;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Told what the runtime does, as it does it: for metrics. Register one as an OSGi service (the
 * {@code metrics} bundle does); the http edge, core and the plugin administration each call the
 * highest-ranked one if there is one, through an optional dynamic reference, so they work the same
 * without it and while it comes and goes. Calls come from request threads, concurrently, and must
 * return at once and never throw. Every method does nothing by default, so that events added in a
 * later minor version leave existing observers working. Since 1.2.
 */
@ConsumerType
public interface RuntimeObserver {

    /** What became of a sandbox create. */
    enum CreateOutcome {
        /** The sandbox was created. */
        OK,
        /** Refused for capacity, to be retried: a 503 with {@code Retry-After}. */
        REFUSED,
        /** The request was wrong or named something that is not there: a 4xx. */
        INVALID,
        /** Anything else: the backend or the host failed. */
        FAILED
    }

    /** Observes nothing; what callers hold while no observer is registered. */
    RuntimeObserver NONE = new RuntimeObserver() {
    };

    /**
     * An HTTP request was answered.
     *
     * @param method the request method
     * @param route the matched route template with its prefix, e.g. {@code /v1/sandboxes/{id}};
     *        {@code /healthz} and {@code /version} as they are; {@code unmatched} when no route matched
     * @param status the status answered
     * @param nanos from the request reaching the edge to its answer being written
     */
    default void requestCompleted(String method, String route, int status, long nanos) {
    }

    /** A sandbox create ended. */
    default void sandboxCreated(CreateOutcome outcome) {
    }

    /** A sandbox was deleted. */
    default void sandboxDeleted() {
    }

    /**
     * A sandbox's lifecycle lock (create, adopt, delete, marking it failed) was released.
     *
     * @param waitNanos how long the taker waited for it
     * @param heldNanos how long it was held
     */
    default void lifecycleLockReleased(long waitNanos, long heldNanos) {
    }

    /** A record was written to the state store (temp file, fsync, rename, fsync of the directory). */
    default void stateWritten(long nanos) {
    }

    /**
     * A commit of the state store ended. Since 2.1.
     *
     * @param store the store's name ({@code file}, {@code postgres})
     * @param waitNanos waited for the store's locks and, on a database, a connection
     * @param heldNanos from then to the commit's end
     */
    default void storeCommitted(String store, long waitNanos, long heldNanos) {
    }

    /** Whether the state store {@code store} can be reached now; told at start and when it changes. Since 2.1. */
    default void storeHealth(String store, boolean up) {
    }

    /**
     * The fleet's nodes, after each round of the master's hellos (every few seconds) and when one
     * is added or revoked: the whole list each time, so a node that left is gone from it. Since 2.2.
     */
    default void fleetNodes(java.util.List<FleetNode> nodes) {
    }

    /**
     * A node fetched a snapshot image from the node that holds it, at the master's request.
     *
     * @param node the node that fetched it
     * @param ok whether it holds the image now
     * @param bytes the image's bytes (its files' apparent sizes)
     * @param nanos from the holder's ticket asked for to the copy published (or the failure)
     * @since 2.3
     */
    default void imageFetched(String node, boolean ok, long bytes, long nanos) {
    }

    /** A sandbox idle for its {@code idle} time was demoted to {@code tier} ({@code warm}). Since 2.9. */
    default void sandboxDemoted(String tier) {
    }

    /**
     * A bundle was replaced at run time (through the plugin API or the deploy folder).
     *
     * @param symbolicName the bundle
     * @param ok whether the new jar runs now (false: it did not resolve or start and the old one runs again)
     * @param nanos from the request to the new revision started or the old one back
     */
    default void bundleUpdated(String symbolicName, boolean ok, long nanos) {
    }
}
