package io.vivarium.guest.client;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The contract against our own agent, the real binary, over its Unix socket (a connection per call, idle ones kept). */
class VivariumAgentContractTest extends GuestAgentContract {
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
        return GuestAgentClient.unixSocket(agent.socket());
    }

    @Override
    boolean extended() {
        return true;
    }
}
