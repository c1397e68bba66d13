package io.vivarium.launcher;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One client of {@link CliServer}: reads its request, runs the command line with the client's
 * caller, sends what it prints and its exit code as {@link CliProtocol} frames. When the client's end
 * closes first (Ctrl-C, a closed pipe), the command's thread is interrupted, which ends a streamed
 * exec as the end of a JVM would have: the daemon sees the connection go.
 */
final class CliSession implements Runnable {
    private final SocketChannel channel;
    private final Object writing = new Object();
    /** Set before the exit frame is sent: the client may then close its end without interrupting anything. */
    private volatile boolean ended;

    CliSession(SocketChannel channel) {
        this.channel = channel;
    }

    @Override
    public void run() {
        try (channel) {
            CliProtocol.Request request = CliProtocol.read(channel);
            CliProtocol.writeTaken(channel);
            Thread command = Thread.currentThread();
            Thread watch = Thread.ofPlatform().daemon().name(command.getName() + "-caller").start(() -> awaitCallerGone(command));
            int code;
            try (PrintStream out = frames(CliProtocol.STDOUT); PrintStream err = frames(CliProtocol.STDERR)) {
                try {
                    code = run(request.words(), request.caller(), out, err);
                } catch (RuntimeException | Error e) {
                    // what a JVM of its own would print before it ended with 1
                    e.printStackTrace(err);
                    code = 1;
                }
            }
            ended = true;
            synchronized (writing) {
                CliProtocol.writeExit(channel, code);
            }
            watch.interrupt();
        } catch (IOException e) {
            // the caller went away (the command was interrupted), or spoke another protocol
            Console.log("INFO", "cli-server", "a session ended early: " + e, null);
        }
    }

    private static int run(List<String> words, Caller caller, PrintStream out, PrintStream err) {
        if (words.isEmpty() || !Main.isCommandLine(words.get(0))) {
            err.println("vivarium: the command-line server runs sandbox, snapshot, vm, volume, template, node, plugins and features,"
                    + " not " + (words.isEmpty() ? "nothing" : "'" + words.get(0) + "'"));
            return 2;
        }
        return Main.commandLine(words.get(0), words.subList(1, words.size()), caller, out, err);
    }

    /**
     * The client sends nothing after its request: a read that ends (end of stream, or a reset when it
     * went with frames unread) means it is gone, unless this session ended and closed the channel.
     */
    private void awaitCallerGone(Thread command) {
        try {
            if (channel.read(ByteBuffer.allocate(1)) >= 0) {
                return;
            }
        } catch (IOException e) {
            if (!channel.isOpen()) {
                return;
            }
        }
        if (!ended) {
            command.interrupt();
        }
    }

    private PrintStream frames(byte type) {
        OutputStream stream = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                if (len > 0) {
                    synchronized (writing) {
                        CliProtocol.write(channel, type, b, off, len);
                    }
                }
            }
        };
        return new PrintStream(stream, true, StandardCharsets.UTF_8);
    }
}
