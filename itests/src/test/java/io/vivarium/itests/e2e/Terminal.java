package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A client of {@code GET /v1/sandboxes/{id}/pty} on the JDK's WebSocket: what the terminal shows,
 * collected as text, and the server's text messages (started, error, exit) in order.
 */
final class Terminal implements WebSocket.Listener, AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final StringBuilder screen = new StringBuilder();
    private final StringBuilder text = new StringBuilder();
    final BlockingQueue<JsonNode> messages = new LinkedBlockingQueue<>();
    final CompletableFuture<Integer> closed = new CompletableFuture<>();
    final WebSocket socket;

    /** Opens a terminal on {@code path} (under the daemon's base URL, with its query). */
    Terminal(String baseUrl, String token, String path) {
        this.socket = HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + token)
                .connectTimeout(PATIENCE).buildAsync(URI.create(baseUrl.replaceFirst("^http", "ws") + path), this)
                .orTimeout(PATIENCE.toSeconds() + 5, TimeUnit.SECONDS).join();
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
        synchronized (screen) {
            screen.append(StandardCharsets.UTF_8.decode(data));
            screen.notifyAll();
        }
        ws.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
        text.append(data);
        if (last) {
            try {
                messages.add(JSON.readTree(text.toString()));
            } catch (java.io.IOException e) {
                throw new IllegalStateException("the server sent a text message that is not JSON: " + text, e);
            }
            text.setLength(0);
        }
        ws.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
        closed.complete(statusCode);
        return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
        closed.completeExceptionally(error);
    }

    /** Types {@code keys} into the terminal. */
    void type(String keys) {
        Bounded.get(socket.sendBinary(ByteBuffer.wrap(keys.getBytes(StandardCharsets.UTF_8)), true), PATIENCE, "keys are sent");
    }

    void control(String json) {
        Bounded.get(socket.sendText(json, true), PATIENCE, "a control message is sent");
    }

    /** The screen's output so far, once it satisfies {@code until} (or fails after the patience). */
    String screenWhen(Predicate<String> until, String what) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        synchronized (screen) {
            while (!until.test(screen.toString())) {
                long left = deadline - System.nanoTime();
                assertTrue(left > 0, "the terminal did not show " + what + " within " + PATIENCE.toSeconds() + " s: " + screen);
                screen.wait(Math.max(1, left / 1_000_000));
            }
            return screen.toString();
        }
    }

    /** The next text message from the server. */
    JsonNode message() throws InterruptedException {
        JsonNode m = messages.poll(PATIENCE.toSeconds(), TimeUnit.SECONDS);
        assertTrue(m != null, "no text message from the server within " + PATIENCE.toSeconds() + " s");
        return m;
    }

    @Override
    public void close() {
        socket.abort();
    }
}
