package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.testkit.vmm.VsockMux;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The contract against our own agent reached as a Firecracker or Cloud Hypervisor guest's is:
 * through the VMM's vsock Unix socket ({@link GuestTransport#vsock}), a {@link VsockMux} in front of
 * the real agent, each connection opened with {@code CONNECT 1024}.
 */
class VivariumAgentVsockContractTest extends VivariumAgentContractTest {
    private static final int PORT = 1024;

    private VsockMux mux;
    private Path muxSocket;

    @BeforeAll
    void startTheVmmSide() throws Exception {
        muxSocket = agent.socket().resolveSibling("vsock.sock");
        mux = new VsockMux(muxSocket, Map.of(PORT, agent.socket()));
    }

    @AfterAll
    void stopTheVmmSide() throws Exception {
        if (mux != null) {
            mux.close();
        }
    }

    @Override
    GuestAgentClient connect() {
        return new GuestAgentClient(GuestTransport.vsock(muxSocket, PORT));
    }

    @Test
    void aPortNoOneListensOnIsA502NamingIt() {
        try (GuestAgentClient nobody = new GuestAgentClient(GuestTransport.vsock(muxSocket, 2048))) {
            GuestAgentException e = assertThrows(GuestAgentException.class, () -> nobody.ping(seconds(5)));
            assertEquals(502, e.status(), e.getMessage());
            assertTrue(e.getMessage().contains("did not connect to guest port 2048"), e.getMessage());
        }
    }
}
