package io.vivarium.guest.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The contract against the stock qemu-ga over its Unix socket (a connection per call). */
class QemuGaContractTest extends GuestAgentContract {
    private static StockQemuGa agent;

    @BeforeAll
    static void startAgent() throws Exception {
        agent = StockQemuGa.start();
    }

    @AfterAll
    static void stopAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    @Override
    GuestAgentClient connect() {
        return GuestAgentClient.unixSocket(agent.socket());
    }

    @Override
    boolean extended() {
        return false;
    }

    @Test
    void anExtensionCommandIsCommandNotFound() {
        assertFalse(client.peer(seconds(5)).supports(Commands.EXEC));
        try (GuestTransport transport = GuestTransport.unixSocket(agent.socket())) {
            GuestAgentException e = assertThrows(GuestAgentException.class,
                    () -> ExtensionExec.run(transport, ExecSpec.of("true"), seconds(5)));
            assertEquals(501, e.status());
            assertEquals("CommandNotFound", e.agentErrorClass());
        }
    }
}
