package io.vivarium.kit.agent;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Set;

/**
 * The guest agent binary the kit bundle carries (resource {@value #RESOURCE}, a static x86-64 Linux
 * executable built from guest-agent/), written once to a host file that every sandbox then gets
 * read-only (bound into a process sandbox, copied into a container's or a guest's root). The file is replaced atomically (temp, fsync,
 * rename), never rewritten in place, and left alone when it holds this binary already: a running
 * sandbox holds the inode it was given through its bind mount, and its agent's supervisor restarts
 * a worker by forking, never by exec'ing the file again, so the file may be replaced or removed (a
 * bundle update, the daemon cleaning felix-cache at start) without touching running sandboxes.
 */
public final class AgentBinary {

    public static final String RESOURCE = "io/vivarium/guestagent/vivarium-agent";
    public static final String FILE_NAME = "vivarium-agent";

    private static final Set<PosixFilePermission> MODE = PosixFilePermissions.fromString("rwxr-xr-x");

    private AgentBinary() {
    }

    private static byte[] embedded() throws IOException {
        try (InputStream in = AgentBinary.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IOException("this bundle lacks " + RESOURCE + " (build the guest-agent module)");
            }
            return in.readAllBytes();
        }
    }

    /** Whether {@code file} is a regular file (not a link) with mode 0755 and exactly {@code binary} in it. */
    private static boolean holds(Path file, byte[] binary) {
        try {
            return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) && Files.size(file) == binary.length
                    && Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS).equals(MODE)
                    && Arrays.equals(Files.readAllBytes(file), binary);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Writes the binary to {@code dir}/{@value #FILE_NAME} (mode 0755, the daemon's) unless that
     * file holds it already (a bundle update of the same agent: no write, no fsync while the
     * backend is away); returns its path.
     */
    public static Path install(Path dir) throws IOException {
        byte[] binary = embedded();
        Files.createDirectories(dir);
        Path target = dir.resolve(FILE_NAME);
        if (holds(target, binary)) {
            return target;
        }
        Path temp = Files.createTempFile(dir, FILE_NAME, ".tmp");
        try {
            Files.write(temp, binary);
            Files.setPosixFilePermissions(temp, MODE);
            try (FileChannel file = FileChannel.open(temp, StandardOpenOption.WRITE)) {
                file.force(true);
            }
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("cannot replace " + target + " atomically", e);
            }
            try (FileChannel directory = FileChannel.open(dir, StandardOpenOption.READ)) {
                directory.force(true);
            }
            return target;
        } finally {
            Files.deleteIfExists(temp);
        }
    }
}
