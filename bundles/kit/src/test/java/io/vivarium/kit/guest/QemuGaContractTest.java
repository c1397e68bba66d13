package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The contract against the stock qemu-ga over its Unix socket (a connection per call). */
class QemuGaContractTest extends LocalPeerContract {
    @Override
    PeerProcess startPeer() throws Exception {
        return StockQemuGa.start();
    }

    @Override
    boolean overOneStream() {
        return false;
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
