package io.vivarium.kit.guest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The contract against an agent process on the host, started once per class: over its Unix socket
 * (a connection per call) or over one held connection, as over a virtio-serial port.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class LocalPeerContract extends GuestAgentContract {
    PeerProcess agent;

    abstract PeerProcess startPeer() throws Exception;

    /** True to hold one connection for every call, false for a connection per call. */
    abstract boolean overOneStream();

    @BeforeAll
    void startAgent() throws Exception {
        agent = startPeer();
    }

    @AfterAll
    void stopAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    @Override
    GuestAgentClient connect() {
        return overOneStream() ? agent.streamClient() : GuestAgentClient.unixSocket(agent.socket());
    }
}
