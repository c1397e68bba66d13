package io.vivarium.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

/** TCP ports of the servers tests start: one that is free now, and whether one listens yet. */
public final class TcpPorts {
    private TcpPorts() {
    }

    /** A port no one listens on now, on any address (so also on the loopback one). */
    public static int free() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free TCP port", e);
        }
    }

    /** Whether something accepts a connection on {@code host:port} now (within a second). */
    public static boolean listening(String host, int port) {
        try (Socket probe = new Socket()) {
            probe.connect(new InetSocketAddress(host, port), 1000);
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }
}
