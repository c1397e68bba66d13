package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The contract against the in-process fake of our agent, over a Unix socket (a connection per call). */
class FakeAgentContractTest extends GuestAgentContract {
    FakeAgent fake;

    @Override
    GuestAgentClient connect() throws Exception {
        fake = new FakeAgent(dir.resolve("agent.sock"));
        return GuestAgentClient.unixSocket(fake.socket());
    }

    @Override
    boolean extended() {
        return true;
    }

    @AfterEach
    void stopFake() throws Exception {
        if (fake != null) {
            fake.close();
        }
    }

    // What is never sent to the stock qemu-ga on this host (it would act on the host itself).

    @Test
    void freezeListAndThawReportCounts() {
        assertEquals(2, client.freeze(List.of("/a", "/b"), seconds(5)));
        assertEquals(0, client.thaw(seconds(5)));
        assertEquals(List.of("[\"/a\",\"/b\"]"), fake.requests("guest-fsfreeze-freeze-list").stream()
                .map(r -> r.path("arguments").path("mountpoints").toString()).toList(), "the mount points reach the agent");
        assertEquals(1, fake.requests("guest-fsfreeze-thaw").size());
    }

    @Test
    void aFailedFreezeIsThawed() {
        List<String> received = new java.util.concurrent.CopyOnWriteArrayList<>();
        fake.override = request -> {
            received.add(request.path("execute").asText());
            return request.path("execute").asText().equals("guest-fsfreeze-freeze-list")
                    ? "{\"error\": {\"class\": \"GenericError\", \"desc\": \"busy\"}}" : null;
        };
        assertEquals(502, assertThrows(GuestAgentException.class, () -> client.freeze(List.of("/a"), seconds(5)))
                .status());
        assertEquals("guest-fsfreeze-thaw", received.get(received.size() - 1));
    }

    @Test
    void shutdownWithoutAnAnswerIsAccepted() {
        client.shutdown("powerdown", seconds(5));
        List<JsonNode> sent = fake.requests("guest-shutdown");
        assertEquals(1, sent.size(), "one shutdown reached the agent: " + fake.received);
        assertEquals("powerdown", sent.getFirst().path("arguments").path("mode").asText(), sent.toString());
    }

    @Test
    void aRefusedShutdownIsAnError() {
        fake.override = request -> request.path("execute").asText().equals("guest-shutdown")
                ? "{\"error\": {\"class\": \"PermissionDenied\", \"desc\": \"no\"}}" : null;
        GuestAgentException e = assertThrows(GuestAgentException.class, () -> client.shutdown("halt", seconds(5)));
        assertEquals(403, e.status());
        assertEquals("PermissionDenied", e.agentErrorClass());
    }

    @Test
    void theClockIsSet() {
        client.setTime(1_700_000_000_000_000_000L, seconds(5));
        client.setTime(null, seconds(5));
        List<JsonNode> sent = fake.requests("guest-set-time");
        assertEquals(2, sent.size(), "both reached the agent: " + fake.received);
        assertEquals(1_700_000_000_000_000_000L, sent.get(0).path("arguments").path("time").asLong(), sent.toString());
        assertFalse(sent.get(1).path("arguments").has("time"),
                "without a time the agent is asked to read the hardware clock: " + sent.get(1));
    }

    @Test
    void aShortExecIsOneRequestOnAKeptConnection() {
        client.exec(ExecSpec.of("true").withEnv(ENV), seconds(10));
        int connections = fake.accepted.get();
        fake.received.clear();
        assertEquals(0, client.exec(ExecSpec.of("true").withEnv(ENV), seconds(10)).exitCode());
        assertEquals(List.of(Commands.EXEC), fake.received);
        assertEquals(connections, fake.accepted.get());
    }
}
