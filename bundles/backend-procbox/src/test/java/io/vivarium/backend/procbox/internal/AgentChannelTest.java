package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The daemon reaches an agent through {@code /proc/<init pid>/root}: a connection made after the
 * init died and its pid went to another process must carry nothing. This test process stands for
 * that other process: its pid is live, its start time is not the recorded one.
 */
class AgentChannelTest {
    @TempDir
    Path dir;

    /** What a peer listening on {@code socket} received from a ping by a client of {@code init}'s agent. */
    private static int bytesReceived(InitProcess init, Path socket) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            try (GuestAgentClient client = AgentChannel.client(init, socket)) {
                // the peer never answers: either the check refuses the connection, or the handshake waits
                assertThrows(GuestAgentException.class, () -> client.ping(Deadline.after(Duration.ofMillis(300))));
            }
            try (SocketChannel accepted = server.accept()) {
                ByteBuffer received = ByteBuffer.allocate(4096);
                while (accepted.read(received) > 0) {
                    // until the client's close
                }
                return received.position();
            }
        }
    }

    @Test
    void aConnectionThroughAPidThatIsNoLongerTheInitsSendsNothing() throws Exception {
        long self = ProcessHandle.current().pid();
        assertEquals(0, bytesReceived(new InitProcess(self, "1"), dir.resolve("reused.sock")));
    }

    @Test
    void aConnectionToTheSameInitProceeds() throws Exception {
        InitProcess init = InitProcess.find(ProcessHandle.current().pid()).orElseThrow();
        assertTrue(bytesReceived(init, dir.resolve("same.sock")) > 0, "the handshake was not sent");
    }
}
