package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The guest agent binary this bundle carries (resource {@value #RESOURCE}), written once to a host
 * file that every sandbox then gets read-only. The file is replaced atomically (temp, fsync,
 * rename), never rewritten in place: a running sandbox holds the inode it was given through its
 * bind mount, and its agent's supervisor restarts a worker by forking, never by exec'ing the file
 * again, so the file may be replaced or removed (a bundle update, the daemon cleaning felix-cache
 * at start) without touching running sandboxes.
 */
final class AgentBinary {

    static final String RESOURCE = "io/vivarium/guestagent/vivarium-agent";
    static final String FILE_NAME = "vivarium-agent";

    private AgentBinary() {
    }

    /** Writes the binary to {@code dir}/{@value #FILE_NAME} (mode 0755, the daemon's); returns its path. */
    static Path install(Path dir) throws IOException {
        Files.createDirectories(dir);
        Path target = dir.resolve(FILE_NAME);
        Path temp = Files.createTempFile(dir, FILE_NAME, ".tmp");
        try {
            try (InputStream in = AgentBinary.class.getClassLoader().getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new IOException("this build of procbox lacks " + RESOURCE + " (build the guest-agent module)");
                }
                Files.copy(in, temp, StandardCopyOption.REPLACE_EXISTING);
            }
            Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
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
