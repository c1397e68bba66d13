package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

import io.vivarium.api.spi.RootImage;
import io.vivarium.common.files.AtomicFiles;

/**
 * The unpacked images of this host, one directory per image digest ({@code sha256-<hex>/}: its
 * {@code rootfs/} and {@code image.json}, what a {@link RootImage} says beside its root). A pull
 * stages in {@code staging-<random>/} beside them and is renamed into place once whole, so that a
 * directory of a digest is complete or absent; staging left by a daemon that stopped mid-pull is
 * removed at start.
 */
final class UnpackedImages {
    private static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    private static final String STAGING = "staging-";
    static final String FACTS = "image.json";

    /** What {@code image.json} holds: a {@link RootImage} but its root's path. */
    record Facts(String digest, Map<String, String> env, String workdir, String user, int uid, int gid,
            java.util.List<String> entrypoint, java.util.List<String> cmd) {
    }

    private final Path dir;

    UnpackedImages(Path dir) throws IOException {
        this.dir = Files.createDirectories(dir);
        try (Stream<Path> entries = Files.list(dir)) {
            for (Path leftover : entries.filter(p -> p.getFileName().toString().startsWith(STAGING)).toList()) {
                deleteTree(leftover);
            }
        }
    }

    Path dir() {
        return dir;
    }

    /** A new, empty staging directory for one pull. */
    Path stage() throws IOException {
        return Files.createDirectory(dir.resolve(STAGING + UUID.randomUUID()));
    }

    Optional<RootImage> find(String digest) {
        if (!Sha256.isDigest(digest)) {
            return Optional.empty();
        }
        Path image = dirOf(digest);
        try {
            Facts f = JSON.readValue(image.resolve(FACTS).toFile(), Facts.class);
            return Optional.of(new RootImage(f.digest(), image.resolve("rootfs"), f.env(), f.workdir(), f.user(), f.uid(),
                    f.gid(), f.entrypoint(), f.cmd()));
        } catch (IOException absent) {
            return Optional.empty();
        }
    }

    /**
     * Publishes the bundle unpacked in {@code bundle} (its {@code rootfs/}) as the image of
     * {@code facts.digest()}: its facts written, then the directory renamed into place. Another
     * pull of the same digest that got there first wins; this one is then deleted.
     */
    RootImage publish(Path bundle, Facts facts) throws IOException {
        AtomicFiles.write(bundle.resolve(FACTS), JSON.writeValueAsBytes(facts));
        Path target = dirOf(facts.digest());
        if (!Files.exists(target)) {
            Files.move(bundle, target, StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.fsyncDirectory(dir);
        }
        return find(facts.digest()).orElseThrow(() -> new IOException("the image " + facts.digest() + " vanished as it was published"));
    }

    void remove(String digest) throws IOException {
        if (Sha256.isDigest(digest) && Files.exists(dirOf(digest))) {
            // renamed out of the way first: a directory of a digest is whole or absent
            Path doomed = dir.resolve(STAGING + "removed-" + UUID.randomUUID());
            Files.move(dirOf(digest), doomed, StandardCopyOption.ATOMIC_MOVE);
            deleteTree(doomed);
        }
    }

    private Path dirOf(String digest) {
        return dir.resolve(digest.replace(':', '-'));
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
