package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One long-lived stream for the whole guest (a virtio-serial port). With our agent, requests carry
 * ids and one reader thread routes each answer to its caller, so deferred answers may come back in
 * any order and a long exec poll never delays a ping; a late answer to a caller that gave up is
 * dropped. With the stock agent, which cannot be relied on to echo ids, one request is in flight
 * at a time, and after a caller gave up the stream is resynchronised before the next request. Any
 * malformed or oversized line drops the stream; the next call reopens it through the opener.
 */
final class StreamTransport extends GuestTransport {
    private static final long READER_JOIN_MILLIS = 1000;

    private final String name;
    private final StreamOpener opener;
    /** Held while opening, while writing a request, and for a whole stock call. */
    private final ReentrantLock lock = new ReentrantLock(true);
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    private volatile LineConnection connection;
    private volatile PeerInfo peer;
    private volatile Thread reader;
    private boolean needsSync;
    private volatile boolean closed;

    StreamTransport(String name, StreamOpener opener) {
        this.name = name;
        this.opener = opener;
    }

    @Override
    PeerInfo peer(Deadline deadline) {
        lock(deadline, "waiting for the stream " + name);
        try {
            ensureOpen(deadline);
            return peer;
        } finally {
            lock.unlock();
        }
    }

    @Override
    <T> Wire.Answer<T> call(String command, ObjectNode arguments, Wire.ReturnReader<T> reader, int maxLine,
            Deadline deadline) {
        long id;
        CompletableFuture<byte[]> answer;
        lock(deadline, "waiting for the stream " + name + " to send " + command);
        try {
            LineConnection current = ensureOpen(deadline);
            if (!peer.vivariumAgent()) {
                return callAlone(current, command, arguments, reader, maxLine, deadline);
            }
            id = ids.incrementAndGet();
            answer = new CompletableFuture<>();
            pending.put(id, new Pending(current, answer));
            try {
                current.write(Wire.request(command, arguments, id), deadline);
            } catch (GuestAgentException e) {
                pending.remove(id);
                drop(current, e);
                throw e;
            }
        } finally {
            lock.unlock();
        }
        try {
            byte[] line = answer.get(deadline.remainingNanos(), TimeUnit.NANOSECONDS);
            return Wire.parse(line, command, reader);
        } catch (TimeoutException e) {
            throw GuestAgentException.deadline("waiting for the answer to " + command + " on " + name);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof GuestAgentException g ? g
                    : GuestAgentException.peer("stream " + name + " failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw GuestAgentException.peer("interrupted while waiting for " + command, e);
        } finally {
            pending.remove(id);
        }
    }

    private <T> Wire.Answer<T> callAlone(LineConnection current, String command, ObjectNode arguments,
            Wire.ReturnReader<T> reader, int maxLine, Deadline deadline) {
        try {
            if (needsSync) {
                Handshake.sync(current, deadline);
                needsSync = false;
            }
            current.write(Wire.request(command, arguments, null), deadline);
            needsSync = true;
            byte[] line = current.readLine(maxLine, deadline);
            Wire.Answer<T> answer = Wire.parse(line, command, reader);
            needsSync = false;
            return answer;
        } catch (GuestAgentException e) {
            if (e.status() != 504) {
                drop(current, e);
            }
            throw e;
        }
    }

    private void lock(Deadline deadline, String doing) {
        try {
            if (!lock.tryLock(deadline.remainingNanos(), TimeUnit.NANOSECONDS)) {
                throw GuestAgentException.deadline(doing);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw GuestAgentException.peer("interrupted while " + doing, e);
        }
    }

    /** Under the lock: the open, synchronised, identified stream, opened again if it was dropped. */
    private LineConnection ensureOpen(Deadline deadline) {
        LineConnection current = connection;
        if (current != null && current.isOpen()) {
            return current;
        }
        if (closed) {
            throw GuestAgentException.peer("the client for " + name + " is closed");
        }
        try {
            current = new LineConnection(opener.open(), name);
        } catch (IOException e) {
            throw GuestAgentException.peer("cannot open " + name + ": " + e.getMessage(), e);
        }
        try {
            Handshake.sync(current, deadline);
            peer = Handshake.identify(current, deadline);
        } catch (RuntimeException e) {
            current.close();
            throw e;
        }
        needsSync = false;
        connection = current;
        if (peer.vivariumAgent()) {
            LineConnection stream = current;
            Thread thread = new Thread(() -> readAnswers(stream), "guest-agent reader " + name);
            thread.setDaemon(true);
            reader = thread;
            thread.start();
        }
        return current;
    }

    /** The reader thread: routes each answer line by its id until the stream fails or is closed. */
    private void readAnswers(LineConnection stream) {
        try {
            while (true) {
                byte[] line = stream.readLine(Commands.MAX_LINE, null);
                Long id = Wire.peekId(line);
                if (id == null) {
                    throw GuestAgentException.peer("an answer without an id on " + name);
                }
                Pending waiting = pending.remove(id);
                if (waiting != null) {
                    waiting.answer().complete(line);
                }
            }
        } catch (GuestAgentException e) {
            drop(stream, e);
        }
    }

    /** Closes a failed stream and fails every call waiting on it. */
    private void drop(LineConnection stream, GuestAgentException cause) {
        stream.close();
        if (connection == stream) {
            connection = null;
        }
        pending.values().stream().filter(waiting -> waiting.stream() == stream)
                .forEach(waiting -> waiting.answer().completeExceptionally(cause));
    }

    private record Pending(LineConnection stream, CompletableFuture<byte[]> answer) {
    }

    @Override
    public void close() {
        closed = true;
        LineConnection current = connection;
        if (current != null) {
            drop(current, GuestAgentException.peer("the client for " + name + " was closed"));
        }
        Thread thread = reader;
        if (thread != null && thread != Thread.currentThread()) {
            try {
                thread.join(READER_JOIN_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
