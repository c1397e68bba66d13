package io.vivarium.api.http;

import java.io.IOException;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The client end of an upgraded connection ({@link WebSocketEndpoint}). Sends block until the
 * frame is written, so a slow client slows its sender instead of filling memory. Since 1.5.
 */
@ProviderType
public interface WebSocketPeer {
    /** A normal close (RFC 6455). */
    int NORMAL = 1000;
    /** The endpoint failed (RFC 6455: an unexpected condition). */
    int SERVER_ERROR = 1011;

    /** Sends one binary message; throws when the connection is gone. */
    void sendBinary(byte[] data) throws IOException;

    /** Sends one text message; throws when the connection is gone. */
    void sendText(String message) throws IOException;

    /** Starts the close handshake with {@code code} and {@code reason} (at most 123 bytes of UTF-8). */
    void close(int code, String reason);
}
