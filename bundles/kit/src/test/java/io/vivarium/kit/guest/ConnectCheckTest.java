package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The check a Unix socket client runs on each new connection, before it sends anything. */
class ConnectCheckTest {
    @TempDir
    Path dir;

    @Test
    void aFailedCheckDropsTheConnectionBeforeAnyByteIsSent() throws Exception {
        Path socket = dir.resolve("peer.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            try (GuestAgentClient client = GuestAgentClient.unixSocket(socket, () -> {
                throw new IllegalStateException("not the peer meant");
            })) {
                GuestAgentException e = assertThrows(GuestAgentException.class, () -> client.ping(GuestAgentContract.seconds(5)));
                assertEquals(502, e.status());
                assertTrue(e.getMessage().contains("not the peer meant"), e.getMessage());
            }
            try (SocketChannel accepted = server.accept()) {
                assertEquals(-1, accepted.read(ByteBuffer.allocate(1)), "the client sent something before its check");
            }
        }
    }

    @Test
    void theCheckRunsOncePerNewConnection() throws Exception {
        AtomicInteger checks = new AtomicInteger();
        try (FakeAgent fake = new FakeAgent(dir.resolve("agent.sock"));
                GuestAgentClient client = GuestAgentClient.unixSocket(fake.socket(), checks::incrementAndGet)) {
            client.ping(GuestAgentContract.seconds(5));
            client.ping(GuestAgentContract.seconds(5));
            assertEquals(1, checks.get(), "the idle connection is reused without a new check");
        }
    }
}
