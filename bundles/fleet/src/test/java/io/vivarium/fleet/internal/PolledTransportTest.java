package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.Caller;
import io.vivarium.api.Role;

import org.junit.jupiter.api.Test;

/** A call handed to a poll is answered by the node, or fails as soon as a later poll shows the node never got it. */
class PolledTransportTest {
    private static final Caller ALICE = new Caller("alice", Role.ADMIN);

    private static CompletableFuture<NodeLink.Answer> send(PolledTransport t) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return t.send("POST", "/v1/sandboxes/sb-1/exec", ALICE, "{}".getBytes(), "application/json", Duration.ofSeconds(30));
            } catch (NodeLink.NodeFailure e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        });
    }

    @Test
    void anAnsweredCallReachesItsCallerAndACallTheNodeNeverGotFailsAtItsNextPoll() throws Exception {
        PolledTransport t = new PolledTransport("n4", () -> true);
        CompletableFuture<NodeLink.Answer> answered = send(t);
        List<PullWire.Call> first = t.take(Duration.ofSeconds(5));
        assertEquals(1, first.size());
        assertEquals("alice", first.get(0).tenant());
        assertEquals("admin", first.get(0).role());
        t.holding(List.of(first.get(0).id())); // the node is making it
        t.answer(new PullWire.Result(first.get(0).id(), 200, null, java.util.Base64.getEncoder().encodeToString("ok".getBytes())));
        assertEquals("ok", new String(answered.get(5, TimeUnit.SECONDS).body()));

        CompletableFuture<NodeLink.Answer> lost = send(t);
        assertEquals(1, t.take(Duration.ofSeconds(5)).size()); // handed to a poll whose answer never arrives
        t.holding(List.of()); // the node's next poll holds nothing
        ExecutionException e = assertThrows(ExecutionException.class, () -> lost.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("did not get the call"), e.getCause().getMessage());
    }

    @Test
    void aNodeThatIsNotPollingFailsCallsAtOnce() {
        PolledTransport t = new PolledTransport("n4", () -> false);
        NodeLink.NodeFailure f = assertThrows(NodeLink.NodeFailure.class,
                () -> t.send("GET", "/v1/sandboxes", ALICE, null, null, Duration.ofSeconds(30)));
        assertTrue(f.getMessage().contains("is not polling"), f.getMessage());
    }
}
