package io.vivarium.http.internal;

import java.io.IOException;
import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.WebSocketEndpoint;

import jakarta.servlet.http.HttpServletRequest;

import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.util.FutureCallback;
import org.eclipse.jetty.websocket.core.WebSocketComponents;
import org.eclipse.jetty.websocket.core.server.WebSocketMappings;
import org.eclipse.jetty.websocket.core.server.WebSocketNegotiator;
import org.eclipse.jetty.websocket.core.server.WebSocketServerComponents;

/**
 * Upgrades a request a route answered with a {@link WebSocketEndpoint}, through Jetty's core
 * WebSocket server on the connection the servlet runs on (the jetty12 bundle's Jetty), so that
 * authentication, routing and errors stay the edge's.
 */
final class WebSocketUpgrader {
    /** Past this silence from the client (no frame, not even a ping) the connection is closed. */
    private static final Duration IDLE_TIMEOUT = Duration.ofMinutes(30);
    /** The largest text message a client may send (they are small control messages). */
    private static final long MAX_TEXT_BYTES = 64 * 1024;

    private WebSocketUpgrader() {
    }

    /** True when the request asks for a WebSocket ({@code Upgrade: websocket}). */
    static boolean isUpgrade(HttpServletRequest req) {
        String upgrade = req.getHeader("Upgrade");
        return upgrade != null && upgrade.trim().equalsIgnoreCase("websocket");
    }

    /** Upgrades the connection and hands it to {@code endpoint}; 400 when the request is not a valid upgrade. */
    static void upgrade(HttpServletRequest req, WebSocketEndpoint endpoint) throws IOException {
        ServletContextRequest request = ServletContextRequest.getServletContextRequest(req);
        if (request == null || !isUpgrade(req)) {
            throw ApiException.badRequest(req.getRequestURI() + " answers with a WebSocket: send a GET with"
                    + " 'Connection: Upgrade' and 'Upgrade: websocket' (curl cannot; use a WebSocket client)");
        }
        WebSocketComponents components = WebSocketServerComponents.ensureWebSocketComponents(
                request.getConnectionMetaData().getConnector().getServer(), request.getServletContextHandler());
        WebSocketMappings mappings = new WebSocketMappings(components);
        WebSocketNegotiator negotiator = (upgradeRequest, upgradeResponse, callback) -> new EndpointFrames(endpoint);
        FutureCallback done = new FutureCallback();
        boolean upgraded = mappings.upgrade(negotiator, request, request.getServletContextResponse(), done, config -> {
            config.setIdleTimeout(IDLE_TIMEOUT);
            config.setMaxTextMessageSize(MAX_TEXT_BYTES);
        });
        if (!upgraded) {
            throw ApiException.badRequest("not a valid WebSocket upgrade (RFC 6455: Sec-WebSocket-Key and"
                    + " Sec-WebSocket-Version: 13 are required)");
        }
        done.block();
    }
}
