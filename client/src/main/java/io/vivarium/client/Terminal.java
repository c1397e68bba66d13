package io.vivarium.client;

import java.io.IOException;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import io.vivarium.api.CommandInfo;
import io.vivarium.api.TerminalSize;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A terminal in a sandbox over WebSocket ({@link Commands#terminal}): what it shows goes to the
 * screen consumer as it comes, {@link #type} sends keys, {@link #resize} its size. Closing it before
 * its command ended hangs the command up (the server sends SIGHUP, then SIGKILL).
 */
public final class Terminal implements AutoCloseable {
    private final CompletableFuture<CommandInfo> started = new CompletableFuture<>();
    private final CompletableFuture<CommandInfo> ended = new CompletableFuture<>();
    private final WebSocket socket;
    private final Consumer<String> errors;

    Terminal(Http http, String path, Consumer<byte[]> screen, Consumer<String> errors) {
        this.errors = errors;
        this.socket = http.webSocket(path, new Listener(screen));
    }

    /** The background command the terminal runs (its id for the command routes), once the server said. */
    public CommandInfo command(Duration wait) {
        return get(started, wait, "the terminal's start");
    }

    /** Sends {@code keys} as typed. */
    public void type(byte[] keys) {
        socket.sendBinary(ByteBuffer.wrap(keys), true).join();
    }

    public void type(String keys) {
        type(keys.getBytes(StandardCharsets.UTF_8));
    }

    /** Sets the terminal's size; its programs get SIGWINCH. */
    public void resize(TerminalSize size) {
        control(Map.of("type", "resize", "rows", size.rows(), "cols", size.cols()));
    }

    /** Sends {@code signal} to the terminal's command (its process group). */
    public void signal(int signal) {
        control(Map.of("type", "signal", "signal", signal));
    }

    private void control(Map<String, Object> message) {
        try {
            socket.sendText(Http.JSON.writeValueAsString(message), true).join();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The command once it ended (the server then closes the terminal); throws when it runs past {@code wait}. */
    public CommandInfo await(Duration wait) {
        return get(ended, wait, "the terminal's command");
    }

    private static CommandInfo get(CompletableFuture<CommandInfo> f, Duration wait, String what) {
        try {
            return f.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new VivariumException(0, what + " did not come within " + wait.toSeconds() + " s", null, e);
        } catch (ExecutionException e) {
            throw new VivariumException(0, what + ": the terminal's connection failed: " + e.getCause(), null, e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VivariumException(0, "interrupted while waiting for " + what, null, e);
        }
    }

    /** Closes the connection; a command still running is hung up by the server. */
    @Override
    public void close() {
        socket.abort();
        ended.completeExceptionally(new IllegalStateException("the terminal was closed"));
    }

    private final class Listener implements WebSocket.Listener {
        private final Consumer<byte[]> screen;
        private final StringBuilder text = new StringBuilder();

        Listener(Consumer<byte[]> screen) {
            this.screen = screen;
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            screen.accept(bytes);
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                message(text.toString());
                text.setLength(0);
            }
            ws.request(1);
            return null;
        }

        private void message(String json) {
            try {
                JsonNode m = Http.JSON.readTree(json);
                switch (m.path("type").asText()) {
                    case "started" -> started.complete(Http.JSON.treeToValue(m.get("command"), CommandInfo.class));
                    case "exit" -> ended.complete(Http.JSON.treeToValue(m.get("command"), CommandInfo.class));
                    case "error" -> errors.accept(m.path("error").asText());
                    default -> { } // a later server's message this client does not know
                }
            } catch (IOException e) {
                errors.accept("the server sent what is not JSON: " + json);
            }
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            VivariumException closed = new VivariumException(0, "the terminal closed (" + statusCode + " " + reason + ")", null, null);
            started.completeExceptionally(closed);
            ended.completeExceptionally(closed);
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            started.completeExceptionally(error);
            ended.completeExceptionally(error);
        }
    }
}
