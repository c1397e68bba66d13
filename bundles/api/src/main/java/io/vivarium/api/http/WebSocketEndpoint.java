package io.vivarium.api.http;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * What a {@link RouteHandler} of a {@code GET} route returns to answer with a WebSocket: the http
 * bundle upgrades the connection (a request that is not an upgrade is a 400) and then calls these
 * methods, one at a time, in order. Anything that can fail as an HTTP status must fail before the
 * handler returns. Since 1.5.
 */
@ConsumerType
public interface WebSocketEndpoint {

    /** The connection is upgraded; {@code peer} sends to the client until {@link #closed}. */
    void opened(WebSocketPeer peer);

    /** A whole text message from the client. */
    void text(String message);

    /** Binary data from the client, as it comes (a fragmented message arrives in its fragments). */
    void binary(byte[] data);

    /**
     * The connection is closed, by either side or by a failure; nothing more is sent or received.
     * Also called, without {@link #opened}, when the upgrade failed (the client then gets a 400).
     */
    void closed(int code, String reason);
}
