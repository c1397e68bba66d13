package io.vivarium.http.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;

import io.vivarium.api.http.WebSocketEndpoint;
import io.vivarium.api.http.WebSocketPeer;

import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.FutureCallback;
import org.eclipse.jetty.websocket.core.CloseStatus;
import org.eclipse.jetty.websocket.core.CoreSession;
import org.eclipse.jetty.websocket.core.Frame;
import org.eclipse.jetty.websocket.core.FrameHandler;
import org.eclipse.jetty.websocket.core.OpCode;

/**
 * Jetty's frames to a {@link WebSocketEndpoint}: text messages whole, binary data as it comes, one
 * frame at a time (the next is asked for once the endpoint took this one, so a slow endpoint slows
 * the client); and the endpoint's sends as frames, each waited for.
 */
final class EndpointFrames implements FrameHandler, WebSocketPeer {
    private static final System.Logger LOG = System.getLogger(EndpointFrames.class.getName());

    private final WebSocketEndpoint endpoint;
    private final ByteArrayOutputStream text = new ByteArrayOutputStream();
    /** The data message being received is text (its continuations are collected), else binary. */
    private boolean inText;
    private volatile CoreSession session;

    EndpointFrames(WebSocketEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public void onOpen(CoreSession coreSession, Callback callback) {
        session = coreSession;
        callback.succeeded();
        try {
            endpoint.opened(this);
        } finally {
            coreSession.demand();
        }
    }

    @Override
    public void onFrame(Frame frame, Callback callback) {
        try {
            byte op = frame.getOpCode();
            if (op == OpCode.TEXT || op == OpCode.CONTINUATION && inText) {
                inText = !frame.isFin();
                ByteBuffer payload = frame.getPayload();
                if (payload != null) {
                    byte[] part = new byte[payload.remaining()];
                    payload.get(part);
                    text.write(part, 0, part.length);
                }
                if (frame.isFin()) {
                    String message = text.toString(StandardCharsets.UTF_8);
                    text.reset();
                    endpoint.text(message);
                }
            } else if (op == OpCode.BINARY || op == OpCode.CONTINUATION) {
                ByteBuffer payload = frame.getPayload();
                if (payload != null && payload.hasRemaining()) {
                    byte[] data = new byte[payload.remaining()];
                    payload.get(data);
                    endpoint.binary(data);
                }
            }
            callback.succeeded();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "a WebSocket endpoint failed on a frame from the client", e);
            callback.failed(e);
            return;
        }
        session.demand();
    }

    @Override
    public void onError(Throwable cause, Callback callback) {
        LOG.log(Level.DEBUG, "WebSocket error", cause);
        callback.succeeded();
    }

    @Override
    public void onClosed(CloseStatus closeStatus, Callback callback) {
        try {
            endpoint.closed(closeStatus.getCode(), closeStatus.getReason());
        } finally {
            callback.succeeded();
        }
    }

    @Override
    public void sendBinary(byte[] data) throws IOException {
        send(new Frame(OpCode.BINARY, ByteBuffer.wrap(data)));
    }

    @Override
    public void sendText(String message) throws IOException {
        send(new Frame(OpCode.TEXT, message));
    }

    private void send(Frame frame) throws IOException {
        FutureCallback sent = new FutureCallback();
        session.sendFrame(frame, sent, false);
        try {
            sent.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while sending", e);
        } catch (ExecutionException e) {
            throw new IOException("the WebSocket is closed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    @Override
    public void close(int code, String reason) {
        session.close(code, reason, Callback.NOOP);
    }
}
