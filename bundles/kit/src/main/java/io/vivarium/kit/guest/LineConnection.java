package io.vivarium.kit.guest;

import java.io.Closeable;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * One byte stream to an agent, framed as lines, with every read, write and connect bounded by a
 * {@link Deadline}. The channel is non-blocking and waited on with selectors (one for reads, one
 * for writes, so a reader thread and writers can share the stream). Failures are {@link
 * GuestAgentException}s; after one the connection must be dropped (or resynchronised).
 *
 * <p>A daemon keeps one of these per live sandbox, so what each holds counts a thousand times: a
 * 16 KiB read buffer, a response line grown from 1 KiB as it needs, and the write selector opened
 * only when a write first finds the socket full (each selector is an epoll and an eventfd descriptor
 * and a native event array).
 */
final class LineConnection implements Closeable {
    private static final int READ_CHUNK = 16 * 1024;
    private static final int FIRST_LINE_BYTES = 1024;
    private static final byte DELIMITER = (byte) 0xFF;

    private final SocketChannel channel;
    private final Selector readSelector;
    /** Opened by the first write that finds the socket full; guarded by {@code this}. */
    private Selector writeSelector;
    private final ByteBuffer readBuffer = ByteBuffer.allocate(READ_CHUNK).flip();
    private final String name;
    private volatile boolean closed;

    LineConnection(SocketChannel channel, String name) throws IOException {
        this.channel = channel;
        this.name = name;
        channel.configureBlocking(false);
        readSelector = Selector.open();
        channel.register(readSelector, SelectionKey.OP_READ);
    }

    private synchronized Selector writeSelector() throws IOException {
        if (closed) {
            throw new IOException("the connection was closed");
        }
        if (writeSelector == null) {
            writeSelector = Selector.open();
            channel.register(writeSelector, SelectionKey.OP_WRITE);
        }
        return writeSelector;
    }

    /** Connects to a Unix socket, waiting at most until the deadline (a full backlog blocks). */
    static LineConnection connect(UnixDomainSocketAddress address, Deadline deadline) {
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open(java.net.StandardProtocolFamily.UNIX);
            channel.configureBlocking(false);
            if (!channel.connect(address)) {
                try (Selector selector = Selector.open()) {
                    channel.register(selector, SelectionKey.OP_CONNECT);
                    while (!channel.finishConnect()) {
                        deadline.check("connecting to " + address.getPath());
                        selector.select(deadline.selectMillis());
                    }
                }
            }
            return new LineConnection(channel, address.getPath().toString());
        } catch (IOException e) {
            closeQuietly(channel);
            throw GuestAgentException.peer("cannot connect to " + address.getPath() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    String name() {
        return name;
    }

    boolean isOpen() {
        return !closed && channel.isOpen();
    }

    /**
     * True if an idle connection can carry another request: still open, nothing unread and not
     * closed by the peer (one non-blocking read; an agent that restarted shows up here as EOF).
     */
    boolean isReusable() {
        if (!isOpen() || readBuffer.hasRemaining()) {
            return false;
        }
        ByteBuffer probe = ByteBuffer.allocate(1);
        try {
            return channel.read(probe) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** Writes the whole line (the caller adds the newline). */
    void write(byte[] line, Deadline deadline) {
        ByteBuffer buffer = ByteBuffer.wrap(line);
        try {
            while (buffer.hasRemaining()) {
                if (channel.write(buffer) == 0) {
                    deadline.check("writing a request to " + name);
                    Selector selector = writeSelector();
                    selector.select(deadline.selectMillis());
                    selector.selectedKeys().clear();
                }
            }
        } catch (IOException | ClosedSelectorException e) {
            throw GuestAgentException.peer("connection " + name + " failed while writing: " + e.getMessage(), e);
        }
    }

    /**
     * Reads one line without its newline. A line longer than {@code maxBytes} is an error (the peer
     * is misbehaving; drop the connection). A {@code null} deadline waits until data or close.
     */
    byte[] readLine(int maxBytes, Deadline deadline) {
        byte[] line = new byte[Math.min(maxBytes, FIRST_LINE_BYTES)];
        int length = 0;
        while (true) {
            while (readBuffer.hasRemaining()) {
                byte b = readBuffer.get();
                if (b == '\n') {
                    return Arrays.copyOf(line, length);
                }
                if (length == maxBytes) {
                    throw GuestAgentException.peer("a response line from " + name + " is longer than " + maxBytes
                            + " bytes");
                }
                if (length == line.length) {
                    line = Arrays.copyOf(line, (int) Math.min(maxBytes, 2L * line.length));
                }
                line[length++] = b;
            }
            fill(deadline, length == 0 ? "waiting for a response" : "reading a response");
        }
    }

    /** Discards bytes up to and including the next 0xFF (at most {@code maxDiscard} bytes). */
    void discardThroughDelimiter(int maxDiscard, Deadline deadline) {
        int discarded = 0;
        while (true) {
            while (readBuffer.hasRemaining()) {
                if (readBuffer.get() == DELIMITER) {
                    return;
                }
                if (++discarded > maxDiscard) {
                    throw GuestAgentException.peer("no sync delimiter from " + name + " within " + maxDiscard
                            + " bytes");
                }
            }
            fill(deadline, "waiting for the sync delimiter");
        }
    }

    private void fill(Deadline deadline, String doing) {
        readBuffer.clear();
        try {
            while (true) {
                int n = channel.read(readBuffer);
                if (n < 0) {
                    throw GuestAgentException.closed("connection " + name + " closed by the agent while " + doing);
                }
                if (n > 0) {
                    return;
                }
                if (closed) {
                    throw GuestAgentException.peer("connection " + name + " was closed");
                }
                if (deadline != null) {
                    deadline.check(doing + " on " + name);
                }
                readSelector.select(deadline == null ? 0 : deadline.selectMillis());
                readSelector.selectedKeys().clear();
            }
        } catch (IOException | ClosedSelectorException e) {
            throw GuestAgentException.peer("connection " + name + " failed while " + doing + ": " + e.getMessage(), e);
        } finally {
            readBuffer.flip();
        }
    }

    /** Closes the stream; a thread blocked in {@link #readLine} without a deadline wakes and fails. */
    @Override
    public void close() {
        Selector writes;
        synchronized (this) {
            closed = true;
            writes = writeSelector;
        }
        readSelector.wakeup();
        if (writes != null) {
            writes.wakeup();
        }
        closeQuietly(channel);
        closeQuietly(readSelector);
        closeQuietly(writes);
    }

    private static void closeQuietly(Closeable closeable) {
        if (closeable != null) {
            try {
                closeable.close();
            } catch (IOException ignored) {
                // nothing left to release
            }
        }
    }
}
