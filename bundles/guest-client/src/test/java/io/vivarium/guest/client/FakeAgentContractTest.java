package io.vivarium.guest.client;

import org.junit.jupiter.api.AfterEach;

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
}
