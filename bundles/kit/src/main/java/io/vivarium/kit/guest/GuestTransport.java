package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * How requests reach the agent. Two kinds: {@link #unixSocket(Path) a Unix socket} the agent
 * listens on (a connection per call, idle ones to our agent kept for reuse; no thread), or reaches
 * through a VMM's {@link #vsock vsock socket}, and {@link
 * #stream(StreamOpener) one long-lived stream} (a virtio-serial chardev socket: requests multiplexed
 * by id through one reader thread when the peer is ours, one at a time when it is stock). Either
 * way, every new connection is resynchronised with {@code guest-sync-delimited} and the peer is
 * identified with {@code guest-info}.
 */
public abstract class GuestTransport implements AutoCloseable {

    /** Opens the stream again after it was dropped (a QEMU chardev socket server accepts a reconnect). */
    @FunctionalInterface
    public interface StreamOpener {
        SocketChannel open() throws IOException;
    }

    GuestTransport() {
    }

    public static GuestTransport unixSocket(Path socket) {
        return unixSocket(socket, () -> { });
    }

    /**
     * As {@link #unixSocket(Path)}, and {@code connected} runs on every new connection once it is
     * made and before anything is sent on it; an exception it throws drops the connection and
     * fails the call as a 502 {@link GuestAgentException}. For a socket reached through a path that may come to name another peer (such as
     * {@code /proc/PID/root/...} after the pid was reused): check there that it still names the
     * one meant.
     */
    public static GuestTransport unixSocket(Path socket, Runnable connected) {
        return new UnixSocketTransport(UnixDomainSocketAddress.of(socket), (connection, deadline) -> connected.run());
    }

    /**
     * An agent listening on vsock port {@code port} of a Firecracker or Cloud Hypervisor guest,
     * reached through the VMM's vsock Unix socket {@code socket} (Firecracker's {@code uds_path},
     * Cloud Hypervisor's {@code socket}): every connection starts with {@code CONNECT <port>} and
     * the VMM's {@code OK <host port>}, and is then served as {@link #unixSocket(Path)}'s. A VMM that
     * answers otherwise, or closes the connection (no listener on that port yet: a guest still
     * booting), fails the call as a 502 {@link GuestAgentException}. Since 1.5.
     */
    public static GuestTransport vsock(Path socket, int port) {
        if (port <= 0) {
            throw new IllegalArgumentException("a vsock port is a positive number, not " + port);
        }
        return new UnixSocketTransport(UnixDomainSocketAddress.of(socket), new VsockConnect(socket, port));
    }

    /** A stream opened on first use and reopened after a failure; {@code name} appears in errors. */
    public static GuestTransport stream(String name, StreamOpener opener) {
        return new StreamTransport(name, opener);
    }

    /** The peer of the current connection, asking {@code guest-info} if no connection has yet. */
    abstract PeerInfo peer(Deadline deadline);

    /** One request and its answer; {@code maxLine} bounds the answer where the transport allows it. */
    abstract <T> Wire.Answer<T> call(String command, ObjectNode arguments, Wire.ReturnReader<T> reader, int maxLine,
            Deadline deadline);

    /** Drops every connection; a later call fails. Stops the reader thread of a stream, if any. */
    @Override
    public abstract void close();
}
