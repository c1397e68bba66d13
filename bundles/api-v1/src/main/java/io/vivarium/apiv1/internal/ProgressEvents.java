package io.vivarium.apiv1.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.Progress;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.RouteRequest;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * A long operation (a fork, a snapshot build) reported as it goes, for a request that asks with
 * {@code Accept: text/event-stream} (docs/clients.md, "Progress"): an event {@code progress} per
 * step, data {@code {"what", "done", "of"}}; a {@code : keep-alive} comment after
 * {@value CommandEvents#KEEP_ALIVE_SECS} s without one; then one last event, {@code result} with
 * the JSON the plain request answers with, or {@code error} with {@code {"status", "error"}}. The
 * stream (status 200) starts at the operation's first step, which comes once core has checked its
 * input: what it refuses then is still an answer of its own (400, 404, 409, 503...). A reader that
 * goes does not stop the operation, as a plain request's would not.
 */
final class ProgressEvents implements BinaryBody {
    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            .build();

    /** The operation, run with the progress it tells. */
    @FunctionalInterface
    interface Operation {
        Object run(Progress progress);
    }

    private record Step(String what, int done, int of) {
    }

    /** Put on the queue once the operation has ended. */
    private static final Object END = new Object();

    private final BlockingQueue<Object> events;
    private final CompletableFuture<Object> outcome;

    private ProgressEvents(BlockingQueue<Object> events, CompletableFuture<Object> outcome) {
        this.events = events;
        this.outcome = outcome;
    }

    /** Whether the request asks for progress: {@code Accept} names {@code text/event-stream}. */
    static boolean asked(RouteRequest r) {
        return r.header("Accept").map(a -> a.contains(CommandEvents.CONTENT_TYPE)).orElse(false);
    }

    /**
     * Runs {@code operation} on a thread of its own and answers with its stream once it told its
     * first step; if it ends before that, its failure is thrown here, an answer of its own.
     */
    static Object start(Operation operation) {
        BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        CompletableFuture<Void> started = new CompletableFuture<>();
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        Thread.ofVirtual().name("vivarium-progress").start(() -> {
            try {
                outcome.complete(operation.run((what, done, of) -> {
                    events.add(new Step(what, done, of));
                    started.complete(null);
                }));
            } catch (Throwable t) {
                outcome.completeExceptionally(t);
            } finally {
                events.add(END);
                started.complete(null);
            }
        });
        try {
            started.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("the daemon is stopping; try again", 1);
        } catch (ExecutionException e) {
            throw new IllegalStateException("never completed exceptionally", e);
        }
        if (events.size() == 1 && outcome.isCompletedExceptionally()) {
            throw failureOf(outcome);
        }
        return new ProgressEvents(events, outcome);
    }

    private static RuntimeException failureOf(CompletableFuture<Object> outcome) {
        try {
            outcome.join();
            throw new IllegalStateException("the operation did not fail");
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                return r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            return new IllegalStateException(e.getCause());
        }
    }

    @Override
    public String contentType() {
        return CommandEvents.CONTENT_TYPE;
    }

    @Override
    public long length() {
        return -1;
    }

    @Override
    public int status(int routeStatus) {
        return 200;
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
        while (true) {
            Object e;
            try {
                e = events.poll(CommandEvents.KEEP_ALIVE_SECS, TimeUnit.SECONDS);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while the operation ran", interrupted);
            }
            if (e == null) {
                out.write(": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII));
            } else if (e instanceof Step step) {
                CommandEvents.event(out, "progress", null, JSON.writeValueAsString(step));
            } else {
                last(out);
                out.flush();
                return;
            }
            out.flush();
        }
    }

    private void last(OutputStream out) throws IOException {
        if (!outcome.isCompletedExceptionally()) {
            CommandEvents.event(out, "result", null, JSON.writeValueAsString(outcome.join()));
            return;
        }
        RuntimeException failure = failureOf(outcome);
        int status = failure instanceof ApiException api ? api.status() : 500;
        String message = failure.getMessage() == null ? failure.getClass().getSimpleName() : failure.getMessage();
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("status", status);
        error.put("error", message);
        CommandEvents.event(out, "error", null, JSON.writeValueAsString(error));
    }
}
