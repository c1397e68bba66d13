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
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;

/**
 * The sandboxes' directories on this node, {@code <state>/sandboxes/<id>/}: core's record
 * ({@link StateCollections#SANDBOXES}) and whatever the backend keeps there (workspace, logs); and
 * where their volumes are bound, {@code <state>/volume-binds/<id>/<n>/}, apart, because a
 * sandbox's directory is removed recursively and must never hold a mount.
 */
final class SandboxDirs {
    private final Path root;
    private final Path volumeBinds;

    SandboxDirs(Path stateDir) {
        this.root = stateDir.resolve("sandboxes");
        this.volumeBinds = stateDir.resolve("volume-binds");
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

    /** Where each volume {@code record} mounts is bound, as its backend is given them. */
    List<AttachedVolume> volumesOf(SandboxRecord record) {
        List<VolumeMount> asked = record.mounts();
        List<AttachedVolume> out = new ArrayList<>(asked.size());
        for (int i = 0; i < asked.size(); i++) {
            VolumeMount m = asked.get(i);
            out.add(new AttachedVolume(m.name(), volumeBindsOf(record.id()).resolve(Integer.toString(i)), m.mountPath(),
                    m.readOnly()));
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
