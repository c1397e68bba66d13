package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.net.UnixDomainSocketAddress;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * An agent listening on a Unix socket. Each call takes a connection of its own, so a long exec
 * never delays a ping. With our agent, idle connections are kept (a few) and reused, so a short
 * exec is one request and one answer; the stock qemu-ga serves only one connection at a time, so
 * with it every call connects and closes. No thread is started: a call runs on the caller's thread.
 */
final class UnixSocketTransport extends GuestTransport {
    private static final int MAX_IDLE = 4;

    private final UnixDomainSocketAddress address;
    private final Preamble preamble;
    private final ConcurrentLinkedDeque<LineConnection> idle = new ConcurrentLinkedDeque<>();
    private volatile PeerInfo peer;
    private volatile boolean closed;

    /** What a new connection does before the agent's handshake: an exception from it drops the connection. */
    @FunctionalInterface
    interface Preamble {
        void run(LineConnection connection, Deadline deadline);
    }

    UnixSocketTransport(UnixDomainSocketAddress address, Preamble preamble) {
        this.address = address;
        this.preamble = preamble;
    }

    @Override
    PeerInfo peer(Deadline deadline) {
        PeerInfo known = peer;
        if (known != null) {
            return known;
        }
        LineConnection connection = open(deadline);
        PeerInfo detected = peer;
        release(connection, true);
        return detected;
    }

    @Override
    <T> Wire.Answer<T> call(String command, ObjectNode arguments, Wire.ReturnReader<T> reader, int maxLine,
            Deadline deadline) {
        LineConnection connection = take(deadline);
        boolean healthy = false;
        try {
            connection.write(Wire.request(command, arguments, null), deadline);
            byte[] line = connection.readLine(maxLine, deadline);
            Wire.Answer<T> answer = Wire.parse(line, command, reader);
            healthy = true;
            return answer;
        } finally {
            release(connection, healthy);
        }
    }

    private LineConnection take(Deadline deadline) {
        LineConnection connection;
        while ((connection = idle.pollFirst()) != null) {
            if (connection.isReusable()) {
                return connection;
            }
            connection.close();
        }
        return open(deadline);
    }

    private LineConnection open(Deadline deadline) {
        if (closed) {
            throw GuestAgentException.peer("the client for " + address.getPath() + " is closed");
        }
        LineConnection connection = LineConnection.connect(address, deadline);
        try {
            try {
                preamble.run(connection, deadline);
            } catch (RuntimeException e) {
                throw GuestAgentException.peer("the connection to " + address.getPath() + " was refused: " + e.getMessage(), e);
            }
            Handshake.sync(connection, deadline);
            if (peer == null) {
                peer = Handshake.identify(connection, deadline);
            }
            return connection;
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /** A failed connection is dropped, and the peer is identified again on the next one (it may have been replaced). */
    private void release(LineConnection connection, boolean healthy) {
        PeerInfo known = peer;
        if (!healthy) {
            peer = null;
        }
        if (healthy && !closed && known != null && known.vivariumAgent() && idle.size() < MAX_IDLE) {
            idle.offerFirst(connection);
            if (closed) {
                drain();
            }
        } else {
            connection.close();
        }
    }

    private void drain() {
        LineConnection connection;
        while ((connection = idle.pollFirst()) != null) {
            connection.close();
        }
    }

    @Override
    public void close() {
        closed = true;
        drain();
    }
}
