package io.vivarium.kit.vmm;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.vivarium.api.spi.InstanceSpec;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The files of a VMM guest that {@link VmmLauncher} starts and ends: in the sandbox's directory the
 * workspace disk ({@value VmmLauncher#WORKSPACE}), the VMM's pid file and its log; in the sandbox's
 * short socket directory, the API and vsock sockets.
 */
final class VmmFiles {
    private static final Duration MKFS_TIMEOUT = Duration.ofSeconds(60);
    private static final int LOG_TAIL_BYTES = 2048;
    /** The longest path a Unix socket address holds (sun_path is 108 bytes with its terminating NUL). */
    private static final int MAX_SOCKET_PATH = 107;

    private final VmmSettings settings;

    VmmFiles(VmmSettings settings) {
        this.settings = settings;
    }

    /** The directory of sandbox {@code id}'s sockets. */
    Path sockets(String id) {
        return settings.socketDir().resolve(id);
    }

    /**
     * The sandbox's socket directory, made in the configured one, which must be this daemon's user's
     * own: it is in a shared place (the temporary directory), where another user could have made it
     * first to take the sockets. A socket's path must fit a Unix socket address.
     */
    Path socketDirectory(InstanceSpec spec) throws IOException {
        Path shared = settings.socketDir();
        try {
            Files.createDirectories(shared.getParent());
            Files.createDirectory(shared, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // made by an earlier start; checked below
        }
        if (!Files.isDirectory(shared, LinkOption.NOFOLLOW_LINKS) || !Files.getAttribute(shared, "unix:uid",
                LinkOption.NOFOLLOW_LINKS).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))) {
            throw new IOException(shared + " is not a directory of this daemon's user: remove it or configure another");
        }
        Path sockets = sockets(spec.id());
        Path longest = sockets.resolve(VmmLauncher.VSOCK_SOCKET);
        if (longest.toString().getBytes(UTF_8).length > MAX_SOCKET_PATH) {
            throw new IOException("the socket path " + longest + " is longer than " + MAX_SOCKET_PATH
                    + " bytes: configure a shorter socket directory");
        }
        return Files.createDirectories(sockets);
    }

    /** Removes the sandbox's sockets and their directory, and the pid file. */
    void removeSockets(InstanceSpec spec) throws IOException {
        Path sockets = sockets(spec.id());
        try (Stream<Path> files = Files.exists(sockets) ? Files.walk(sockets) : Stream.empty()) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
        Files.deleteIfExists(spec.dir().resolve(VmmLauncher.PID_FILE));
    }

    /** The workspace disk, made if missing: an empty ext4 file system labelled {@code work}, sparse, of the spec's disk limit or the configured size. */
    Path workspace(InstanceSpec spec) throws IOException {
        Path disk = spec.dir().resolve(VmmLauncher.WORKSPACE);
        if (Files.exists(disk)) {
            return disk;
        }
        long mib = spec.diskLimitMib() != null ? spec.diskLimitMib() : settings.workspaceMib();
        Path partial = spec.dir().resolve(VmmLauncher.WORKSPACE + ".partial");
        try (RandomAccessFile file = new RandomAccessFile(partial.toFile(), "rw")) {
            file.setLength(mib << 20);
        }
        run(List.of("mkfs.ext4", "-q", "-F", "-L", "work", partial.toString()), MKFS_TIMEOUT);
        Files.move(partial, disk);
        return disk;
    }

    private static void run(List<String> command, Duration timeout) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IOException(command.get(0) + " did not finish within " + timeout.toSeconds() + " s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + command.get(0), e);
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed (exit status " + p.exitValue() + "): "
                    + new String(p.getInputStream().readAllBytes(), UTF_8).strip());
        }
    }

    /** The pid the sandbox's pid file holds; empty before it is written, or while half of it is. */
    static Optional<Long> readPid(Path dir) {
        try {
            return Optional.of(Long.parseLong(Files.readString(dir.resolve(VmmLauncher.PID_FILE), UTF_8).strip()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** Process {@code pid}'s command line, its arguments joined by spaces; empty for a process gone. */
    static String commandLine(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), UTF_8).replace('\0', ' ');
        } catch (IOException e) {
            return "";
        }
    }

    /** The last words of the VMM's output and the guest's console ({@value VmmLauncher#LOG}), for a failure's message. */
    static String logTail(Path log) {
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            long from = Math.max(0, file.length() - LOG_TAIL_BYTES);
            byte[] tail = new byte[(int) (file.length() - from)];
            file.seek(from);
            file.readFully(tail);
            String text = new String(tail, UTF_8).strip();
            return text.isEmpty() ? "nothing" : text;
        } catch (IOException e) {
            return "nothing (" + e.getMessage() + ")";
        }
    }
}
