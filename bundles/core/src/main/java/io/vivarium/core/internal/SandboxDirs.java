package io.vivarium.core.internal;

import io.vivarium.api.VolumeMount;
import io.vivarium.api.spi.AttachedVolume;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;

/**
 * The sandboxes' directories on this node, {@code <state>/sandboxes/<id>/}: core's record
 * ({@link StateCollections#SANDBOXES}) and whatever the backend keeps there (workspace, logs); and
 * where their volumes are bound, {@code <state>/volume-binds/<id>/<n>/}, apart, because a
 * sandbox's directory is removed recursively and must never hold a mount.
 */
final class SandboxDirs {
    private static final String VOLUME_IMAGE_SUFFIX = ".ext4";

    private final Path root;
    private final Path volumeBinds;
    private final Path volumeImages;

    SandboxDirs(Path stateDir) {
        this.root = stateDir.resolve("sandboxes");
        this.volumeBinds = stateDir.resolve("volume-binds");
        this.volumeImages = stateDir.resolve("volumes");
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create state directory " + root, e);
        }
    }

    Path dirOf(String id) {
        return root.resolve(id);
    }

    /** Where every sandbox's volumes are bound, a directory per sandbox. */
    Path volumeBinds() {
        return volumeBinds;
    }

    /** Where the sandbox's volumes are bound ({@link Volumes}). */
    Path volumeBindsOf(String id) {
        return volumeBinds.resolve(id);
    }

    /** Where the volumes' file systems are kept, {@code <key>.ext4} each. */
    Path volumeImages() {
        return volumeImages;
    }

    /** The file system of the volume whose key is {@code key} ({@link Volumes#key}). */
    Path volumeImageOf(String key) {
        return volumeImages.resolve(key + VOLUME_IMAGE_SUFFIX);
    }

    /** The key of the volume whose file system is {@code image}, if it is one's name. */
    static Optional<String> volumeKeyOf(Path image) {
        String file = image.getFileName().toString();
        return file.endsWith(VOLUME_IMAGE_SUFFIX) && !file.startsWith(".")
                ? Optional.of(file.substring(0, file.length() - VOLUME_IMAGE_SUFFIX.length()))
                : Optional.empty();
    }

    /**
     * Each volume {@code record} mounts, as its backend is given them: where it is bound, and its
     * file system for a backend that attaches it as a disk instead.
     */
    List<AttachedVolume> volumesOf(SandboxRecord record) {
        List<VolumeMount> asked = record.mounts();
        List<AttachedVolume> out = new ArrayList<>(asked.size());
        for (int i = 0; i < asked.size(); i++) {
            VolumeMount m = asked.get(i);
            out.add(new AttachedVolume(m.name(), volumeBindsOf(record.id()).resolve(Integer.toString(i)), m.mountPath(),
                    m.readOnly(), volumeImageOf(Volumes.key(record.tenant(), m.name())), m.subPath()));
        }
        return out;
    }

    /** Creates the sandbox's directory; fails if the id is taken. */
    Path createDir(String id) throws IOException {
        Path dir = Files.createDirectory(dirOf(id));
        AtomicFiles.fsyncDirectory(root);
        return dir;
    }

    /** The names of the directories that hold no file {@code name}. */
    List<String> without(String name) throws IOException {
        List<String> ids = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path dir : dirs) {
                if (!Files.exists(dir.resolve(name))) {
                    ids.add(dir.getFileName().toString());
                }
            }
        }
        return ids;
    }

    /** Removes the sandbox's directory and everything in it. */
    void remove(String id) throws IOException {
        Path dir = dirOf(id);
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
