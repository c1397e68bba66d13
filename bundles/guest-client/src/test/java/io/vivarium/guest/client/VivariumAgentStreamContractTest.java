package io.vivarium.guest.client;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The contract against our own agent, the real binary, over one held connection, requests multiplexed by id, as over a virtio-serial port. */
class VivariumAgentStreamContractTest extends GuestAgentContract {
    private static VivariumAgent agent;

    @BeforeAll
    static void startAgent() throws Exception {
        agent = VivariumAgent.start();
    }

    @AfterAll
    static void stopAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    @Override
    GuestAgentClient connect() {
        return agent.streamClient();
    }

    @Override
    boolean extended() {
        return true;
    }
}
