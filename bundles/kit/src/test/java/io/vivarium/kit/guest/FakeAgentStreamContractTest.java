package io.vivarium.kit.guest;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;

import org.junit.jupiter.api.AfterEach;

/** The contract against the fake over one long-lived stream, requests multiplexed by id (as over virtio-serial). */
class FakeAgentStreamContractTest extends GuestAgentContract {
    FakeAgent fake;

    @Override
    GuestAgentClient connect() throws Exception {
        fake = new FakeAgent(dir.resolve("agent.sock"));
        return new GuestAgentClient(GuestTransport.stream("fake stream", () -> {
            SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(fake.socket()));
            return channel;
        }));
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
