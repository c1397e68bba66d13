package io.vivarium.guest.client;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The contract against the stock qemu-ga over one held connection, as over a virtio-serial port:
 * one request at a time, the emulated exec's polls and kills sharing the stream.
 */
class QemuGaStreamContractTest extends GuestAgentContract {
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
        return agent.streamClient();
    }

    @Override
    boolean extended() {
        return false;
    }
}
