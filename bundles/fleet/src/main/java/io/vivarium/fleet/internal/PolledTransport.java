package io.vivarium.fleet.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;

/**
 * Pull mode: the master cannot dial the node, so a call waits in this queue until the node's long
 * poll takes it ({@link #take}), and its caller waits until the node posts the answer
 * ({@link #answer}). A node that is not polling fails calls at once; calls still waiting when it
 * is disconnected fail then ({@link #failAll}).
 */
final class PolledTransport implements NodeLink.Transport {
    private final String node;
    private final BooleanSupplier polling;
    private final LinkedBlockingQueue<PullWire.Call> queued = new LinkedBlockingQueue<>();
    private final Map<String, CompletableFuture<NodeLink.Answer>> waiting = new ConcurrentHashMap<>();
    /** Calls handed to a poll and not answered yet. */
    private final java.util.Set<String> taken = ConcurrentHashMap.newKeySet();

    /** @param polling whether the node polls now (connected) */
    PolledTransport(String node, BooleanSupplier polling) {
        this.node = node;
        this.polling = polling;
    }

    @Override
    public NodeLink.Answer send(String method, String path, Caller caller, byte[] body, String contentType, Duration timeout)
            throws NodeLink.NodeFailure {
        if (!polling.getAsBoolean()) {
            throw new NodeLink.NodeFailure("node " + node + " (which dials in) is not polling the master now", null);
        }
        String id = UUID.randomUUID().toString();
        CompletableFuture<NodeLink.Answer> answer = new CompletableFuture<>();
        waiting.put(id, answer);
        queued.add(new PullWire.Call(id, method, path, caller.tenant(), caller.role().name().toLowerCase(Locale.ROOT),
                body == null ? null : contentType, body == null ? null : Base64.getEncoder().encodeToString(body)));
        try {
            return answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new NodeLink.NodeFailure("node " + node + " did not answer within " + timeout.toSeconds() + " s", e);
        } catch (ExecutionException e) {
            throw new NodeLink.NodeFailure(e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NodeLink.NodeFailure("interrupted while waiting for node " + node, e);
        } finally {
            waiting.remove(id);
            taken.remove(id);
            queued.removeIf(c -> c.id().equals(id));
        }
    }

    /** The calls for the node's poll: those queued now, else the first to come within {@code hold}. */
    List<PullWire.Call> take(Duration hold) throws InterruptedException {
        List<PullWire.Call> calls = new ArrayList<>();
        PullWire.Call first = queued.poll(hold.toMillis(), TimeUnit.MILLISECONDS);
        if (first != null) {
            calls.add(first);
            queued.drainTo(calls);
        }
        calls.forEach(c -> taken.add(c.id()));
        return calls;
    }

    /** The node's answer to a call; one that no caller waits for any more (it timed out) is dropped. */
    void answer(PullWire.Result result) {
        if (result == null || result.id() == null) {
            throw ApiException.badRequest("every result needs the id of the call it answers");
        }
        byte[] body;
        try {
            body = result.body() == null ? new byte[0] : Base64.getDecoder().decode(result.body());
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("the body of result " + result.id() + " is not base64: " + e.getMessage());
        }
        taken.remove(result.id());
        CompletableFuture<NodeLink.Answer> f = waiting.get(result.id());
        if (f != null) {
            f.complete(new NodeLink.Answer(result.status(), body, result.retryAfter()));
        }
    }

    /**
     * A poll says which calls the node is still making: any other call handed out and not answered
     * never reached it (a poll's answer lost with a node that died and came back) and fails now.
     * A node that does not say (null) is left alone.
     */
    void holding(List<String> ids) {
        if (ids == null) {
            return;
        }
        java.util.Set<String> held = java.util.Set.copyOf(ids);
        for (String id : List.copyOf(taken)) {
            if (!held.contains(id) && taken.remove(id)) {
                CompletableFuture<NodeLink.Answer> f = waiting.get(id);
                if (f != null) {
                    f.completeExceptionally(new NodeLink.NodeFailure("node " + node + " did not get the call (its poll's answer was "
                            + "lost: it was restarted or its connection dropped); the call may be sent again", null));
                }
            }
        }
    }

    /** The node stopped polling: every call waiting for it fails now. */
    void failAll(String why) {
        waiting.values().forEach(f -> f.completeExceptionally(new NodeLink.NodeFailure("node " + node + " " + why, null)));
    }
}
