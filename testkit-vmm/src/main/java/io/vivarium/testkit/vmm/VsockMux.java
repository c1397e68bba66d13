package io.vivarium.testkit.vmm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host side of a Firecracker or Cloud Hypervisor guest's vsock, as those VMMs serve it on
 * their vsock Unix socket: a connection says {@code CONNECT <port>\n}; when the guest listens on
 * that port the VMM answers {@code OK <host port>\n} and carries bytes both ways, and otherwise it
 * closes the connection. Here the guest's ports are Unix sockets on the host (a real agent started
 * with {@code --listen unix:PATH} stands in for the guest's {@code --listen vsock:PORT}).
 */
public final class VsockMux implements AutoCloseable {
    private static final int MAX_LINE = 64;

    private final ServerSocketChannel server;
    private final Map<Integer, Path> ports;
    private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
    private final AtomicInteger hostPorts = new AtomicInteger(1 << 30);
    private final Thread acceptor;

    /** Serves {@code socket}, forwarding guest port {@code p} to the Unix socket {@code ports.get(p)}. */
    public VsockMux(Path socket, Map<Integer, Path> ports) throws IOException {
        this.ports = Map.copyOf(ports);
        Files.deleteIfExists(socket);
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(socket));
        this.acceptor = new Thread(this::accept, "vsock-mux " + socket.getFileName());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void accept() {
        while (server.isOpen()) {
            try {
                SocketChannel host = server.accept();
                open.add(host);
                daemon(() -> connect(host), "vsock-mux connection");
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void connect(SocketChannel host) {
        try {
            InputStream fromHost = Channels.newInputStream(host);
            String line = readLine(fromHost);
            Path target = line != null && line.matches("CONNECT [0-9]{1,10}") ? ports.get(Integer.parseInt(line.substring(8)))
                    : null;
            if (target == null) {
                host.close();
                return;
            }
            SocketChannel guest = SocketChannel.open(UnixDomainSocketAddress.of(target));
            open.add(guest);
            OutputStream toHost = Channels.newOutputStream(host);
            toHost.write(("OK " + hostPorts.incrementAndGet() + "\n").getBytes(StandardCharsets.US_ASCII));
            toHost.flush();
            daemon(() -> pipe(Channels.newInputStream(guest), toHost, host), "vsock-mux guest to host");
            pipe(fromHost, Channels.newOutputStream(guest), guest);
        } catch (IOException e) {
            close(host);
        }
    }

    /** The line before the first '\n', read a byte at a time so that nothing after it is taken; null if none. */
    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b; (b = in.read()) >= 0 && line.size() <= MAX_LINE;) {
            if (b == '\n') {
                return line.toString(StandardCharsets.US_ASCII);
            }
            line.write(b);
        }
        return null;
    }

    /** Copies until {@code in} ends, then closes {@code to}'s channel so that its peer sees the end too. */
    private static void pipe(InputStream in, OutputStream out, SocketChannel to) {
        try {
            in.transferTo(out);
        } catch (IOException ended) {
            // either side went: close the other
        }
        close(to);
    }

    private static void close(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing is all that was asked
        }
    }

    private static void daemon(Runnable task, String name) {
        Thread t = new Thread(task, name);
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() throws Exception {
        server.close();
        open.forEach(VsockMux::close);
        acceptor.join(5000);
    }
}
