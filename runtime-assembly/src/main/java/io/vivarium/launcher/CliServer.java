package io.vivarium.launcher;

import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import jdk.net.ExtendedSocketOptions;

/**
 * {@code vivarium cli-server SOCKET}: the command line kept warm. {@code bin/vivarium-cli} (C, a few
 * hundred microseconds to start) sends each {@code sandbox|snapshot|vm|volume|template|node|plugins|features}
 * command line here instead of starting a JVM for it, and starts this server when none answers at its
 * socket (one per user and distribution build, in a directory only that user can enter). Commands
 * run side by side, each with its client's working directory and environment ({@link CliSession}).
 * Only the server's own user may connect (the peer's credentials are checked).
 *
 * <p>It ends when no command has run for {@code VIVARIUM_CLI_IDLE_SECS} (default {@value #IDLE_SECS}),
 * when its socket is removed or replaced, or when the launcher jar it runs is rebuilt; commands under
 * way are finished first.
 */
final class CliServer {
    static final String COMMAND = "cli-server";
    static final long IDLE_SECS = 1800;
    private static final Duration CHECK_EVERY = Duration.ofSeconds(2);

    private final ServerSocketChannel server;
    private final Path socket;
    private final Object socketKey;
    private final Path jar;
    private final FileTime jarBuilt;
    private final long idleNanos;
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicLong lastUsed = new AtomicLong(System.nanoTime());
    private final AtomicInteger sessions = new AtomicInteger();

    private CliServer(ServerSocketChannel server, Path socket, Path jar, long idleSecs) throws IOException {
        this.server = server;
        this.socket = socket;
        this.socketKey = Files.readAttributes(socket, BasicFileAttributes.class).fileKey();
        this.jar = jar;
        this.jarBuilt = jar == null ? null : Files.getLastModifiedTime(jar);
        this.idleNanos = TimeUnit.SECONDS.toNanos(idleSecs);
    }

    /** Serves at the socket {@code args} names until done; {@code env} is this process's (its idle time). */
    static int run(List<String> args, Map<String, String> env, PrintStream err) {
        if (args.size() != 1) {
            err.println("vivarium: usage: vivarium cli-server SOCKET (bin/vivarium-cli starts it; docs/clients.md)");
            return 2;
        }
        Path socket = Path.of(args.get(0)).toAbsolutePath();
        long idleSecs;
        try {
            idleSecs = Long.parseLong(env.getOrDefault("VIVARIUM_CLI_IDLE_SECS", Long.toString(IDLE_SECS)));
        } catch (NumberFormatException e) {
            err.println("vivarium: VIVARIUM_CLI_IDLE_SECS is not a number of seconds");
            return 2;
        }
        try {
            ServerSocketChannel channel = bind(socket);
            if (channel == null) {
                return 0;
            }
            new CliServer(channel, socket, launcherJar(), idleSecs).serve();
            return 0;
        } catch (IOException e) {
            err.println("vivarium: the command-line server cannot listen at " + socket + ": " + e.getMessage());
            return 1;
        }
    }

    /** Listens at {@code socket}; null when another server already answers there. */
    private static ServerSocketChannel bind(Path socket) throws IOException {
        ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            channel.bind(UnixDomainSocketAddress.of(socket));
        } catch (BindException taken) {
            if (answers(socket)) {
                channel.close();
                return null;
            }
            // left by a server that was killed
            Files.deleteIfExists(socket);
            channel.bind(UnixDomainSocketAddress.of(socket));
        }
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        return channel;
    }

    private static boolean answers(Path socket) {
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private void serve() throws IOException {
        ScheduledExecutorService watch = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("cli-server-watch").unstarted(r));
        watch.scheduleWithFixedDelay(this::stopWhenDone, CHECK_EVERY.toMillis(), CHECK_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        // by user id: a user with no name (a container's arbitrary uid) is still the same user
        UserPrincipal me = Files.getOwner(socket, LinkOption.NOFOLLOW_LINKS);
        try {
            while (true) {
                SocketChannel client = accept();
                if (client == null) {
                    continue;
                }
                try {
                    UserPrincipal peer = client.getOption(ExtendedSocketOptions.SO_PEERCRED).user();
                    if (!peer.equals(me)) {
                        Console.log("WARN", "cli-server", "refused a connection of user " + peer.getName(), null);
                        client.close();
                        continue;
                    }
                } catch (IOException e) {
                    Console.log("WARN", "cli-server", "a connection dropped before it was taken: " + e, null);
                    client.close();
                    continue;
                }
                running.incrementAndGet();
                Thread.ofPlatform().daemon().name("cli-session-" + sessions.incrementAndGet()).start(() -> {
                    try {
                        new CliSession(client).run();
                    } finally {
                        lastUsed.set(System.nanoTime());
                        running.decrementAndGet();
                    }
                });
            }
        } catch (ClosedChannelException stopped) {
            awaitSessions();
        } finally {
            watch.shutdownNow();
        }
    }

    /** The next connection; null after a failure that may pass (no descriptor left), which ends no command under way. */
    private SocketChannel accept() throws ClosedChannelException {
        try {
            return server.accept();
        } catch (ClosedChannelException stopped) {
            throw stopped;
        } catch (IOException e) {
            Console.log("WARN", "cli-server", "cannot take a connection: " + e, null);
            try {
                Thread.sleep(100);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
            return null;
        }
    }

    /** Stops listening when idle, when the socket is no longer this server's, or when the launcher jar was rebuilt. */
    private void stopWhenDone() {
        String why = null;
        if (running.get() == 0 && System.nanoTime() - lastUsed.get() > idleNanos) {
            why = "idle";
        } else if (!ownsSocket()) {
            why = "its socket " + socket + " was removed or replaced";
        } else if (jar != null && !jarBuilt.equals(modified(jar))) {
            why = jar + " was rebuilt";
        }
        if (why == null) {
            return;
        }
        Console.log("INFO", "cli-server", "stopping: " + why, null);
        try {
            if (ownsSocket()) {
                // the log of a server that stopped as it should: nothing to look into; before the
                // socket, after which the next server may write a log of its own there
                Files.deleteIfExists(Path.of(socket + ".log"));
                Files.deleteIfExists(socket);
            }
            server.close();
        } catch (IOException e) {
            Console.log("WARN", "cli-server", "stopping: " + e.getMessage(), null);
        }
    }

    private boolean ownsSocket() {
        try {
            return Objects.equals(socketKey, Files.readAttributes(socket, BasicFileAttributes.class).fileKey());
        } catch (IOException gone) {
            return false;
        }
    }

    private void awaitSessions() {
        while (running.get() > 0) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static FileTime modified(Path file) {
        try {
            return Files.getLastModifiedTime(file);
        } catch (IOException gone) {
            return null;
        }
    }

    /** The jar this class was loaded from, or null when it runs from a class folder (tests). */
    private static Path launcherJar() {
        try {
            Path where = Path.of(CliServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return Files.isRegularFile(where) ? where : null;
        } catch (java.net.URISyntaxException | RuntimeException e) {
            return null;
        }
    }
}
