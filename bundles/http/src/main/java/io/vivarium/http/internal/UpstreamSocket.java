package io.vivarium.http.internal;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.Upstream;
import io.vivarium.api.http.WebSocketEndpoint;
import io.vivarium.api.http.WebSocketPeer;

/**
 * A WebSocket passed through to an {@link Upstream}: the upstream's socket is opened first (so that
 * an upstream that refuses is a 502, not an upgraded connection that closes at once), then each
 * message goes across as it comes, in order, and a close on either side closes the other. Frames of a
 * fragmented binary message from the client go on as messages of their own.
 */
final class UpstreamSocket implements WebSocketEndpoint, WebSocket.Listener {
    private static final long SEND_SECONDS = 30;

    private final WebSocket upstream;
    private final CompletableFuture<WebSocketPeer> client = new CompletableFuture<>();
    private final StringBuilder text = new StringBuilder();
    private final java.io.ByteArrayOutputStream binary = new java.io.ByteArrayOutputStream();
    /** The upstream's {@link Upstream#done()}, run once when either side has closed. */
    private final Runnable done;

    private UpstreamSocket(HttpClient http, URI target, Map<String, String> headers, String unreachable, Runnable done) {
        this.done = done;
        WebSocket.Builder b = http.newWebSocketBuilder().connectTimeout(UpstreamProxy.CONNECT_TIMEOUT);
        headers.forEach(b::header);
        try {
            upstream = b.buildAsync(target, this).get(UpstreamProxy.CONNECT_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw refused(target, e.getCause(), unreachable);
        } catch (TimeoutException e) {
            throw new ApiException(502, "the WebSocket upstream " + target + " did not answer its handshake in time");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while connecting to " + target, 1);
        }
    }

    /** Opens the upstream's WebSocket at {@code upstream}'s target (as {@code ws:}) with the request's query. */
    static UpstreamSocket open(HttpClient http, Upstream upstream, String rawQuery, Map<String, String> headers,
            Runnable done) {
        URI target = URI.create("ws" + UpstreamProxy.target(upstream, rawQuery).toString().substring(4));
        return new UpstreamSocket(http, target, headers, upstream.unreachable(), done);
    }

    private static ApiException refused(URI target, Throwable cause, String unreachable) {
        if (cause instanceof ConnectException || cause instanceof HttpConnectTimeoutException) {
            return new ApiException(502, unreachable + " (" + cause.getClass().getSimpleName() + ")");
        }
        if (cause instanceof WebSocketHandshakeException h) {
            return new ApiException(502, "the upstream " + target + " refused the WebSocket (status "
                    + h.getResponse().statusCode() + ")");
        }
        return new ApiException(502, "the WebSocket upstream " + target + " failed: " + cause);
    }

    @Override
    public void opened(WebSocketPeer peer) {
        client.complete(peer);
    }

    @Override
    public void text(String message) {
        send(upstream.sendText(message, true));
    }

    @Override
    public void binary(byte[] data) {
        send(upstream.sendBinary(ByteBuffer.wrap(data), true));
    }

    @Override
    public void closed(int code, String reason) {
        done.run();
        client.complete(null);
        if (!upstream.isOutputClosed()) {
            upstream.sendClose(code == 1005 || code == 1006 || code < 1000 ? WebSocket.NORMAL_CLOSURE : code,
                    reason == null ? "" : reason);
        }
        upstream.abort(); // nothing more is read from it either
    }

    private void send(CompletableFuture<WebSocket> sent) {
        try {
            sent.get(SEND_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            upstream.abort();
            peer().ifPresent(p -> p.close(WebSocketPeer.SERVER_ERROR, "the upstream failed"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private java.util.Optional<WebSocketPeer> peer() {
        try {
            return java.util.Optional.ofNullable(client.get(SEND_SECONDS, TimeUnit.SECONDS));
        } catch (ExecutionException | TimeoutException e) {
            return java.util.Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return java.util.Optional.empty();
        }
    }

    /** A send to the client; one that fails ends the upstream's side too. */
    @FunctionalInterface
    private interface ClientSend {
        void to(WebSocketPeer client) throws IOException;
    }

    private void toClient(WebSocket ws, ClientSend send) {
        peer().ifPresent(p -> {
            try {
                send.to(p);
            } catch (IOException e) {
                ws.abort();
            }
        });
    }

    // The upstream's side (the JDK calls these one at a time).

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
        text.append(data);
        if (last) {
            String message = text.toString();
            text.setLength(0);
            toClient(ws, p -> p.sendText(message));
        }
        ws.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        binary.writeBytes(bytes);
        if (last) {
            byte[] message = binary.toByteArray();
            binary.reset();
            toClient(ws, p -> p.sendBinary(message));
        }
        ws.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
        done.run();
        peer().ifPresent(p -> p.close(statusCode, reason));
        return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
        done.run();
        peer().ifPresent(p -> p.close(WebSocketPeer.SERVER_ERROR, "the upstream failed"));
    }
}
