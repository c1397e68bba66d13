package io.vivarium.api;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * How far a long operation has come, told as it goes (a fork of many children, a snapshot build):
 * the API streams it to a client that asks (docs/clients.md, "Progress"). Called from the
 * operation's threads, possibly several at once. Since 2.9.
 */
@ConsumerType
@FunctionalInterface
public interface Progress {

    /** Nothing is told. */
    Progress NONE = (what, done, of) -> { };

    /**
     * {@code done} of the operation's {@code of} steps are done ({@code done} may be 0: the
     * operation is under way, its input checked); {@code what} names them, e.g. "children".
     */
    void step(String what, int done, int of);
}
