package io.vivarium.storage.reflink.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Stream;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;
import io.vivarium.common.files.StagedFile;

/**
 * Copy-on-write clones of files and directory trees where the target's filesystem has them (XFS
 * with reflink, btrfs), an honest full copy elsewhere: every result says {@code reflink} or
 * {@code copy}. A file is written to a {@link StagedFile} and linked into place (never replacing
 * one); a tree is written under the same hidden staging name and renamed into place. So a
 * {@code kill -9} leaves the whole artifact or a staging entry beside it, which the next attempt
 * for that target, a {@link #delete} of it, or the deletion of its folder removes. What is stored or
 * compacted is forced to disk; what is materialised for an instance is not. Artifacts stand
 * alone: no parents, no chains. The clone-or-copy itself is common's {@link FileClones}.
 */
final class ReflinkStrategy implements StorageStrategy {

    static final String NAME = "reflink";
    static final String MODE_REFLINK = FileClones.REFLINK;
    static final String MODE_COPY = FileClones.COPY;

    private final FileClones clones = new FileClones();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return EnumSet.allOf(ArtifactKind.class);
    }

    @Override
    public Set<String> modes() {
        return Set.of(MODE_REFLINK, MODE_COPY);
    }

    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return clones.clones(dir);
    }

    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        return copy(kind, source, target, true, context);
    }

    /**
     * Not forced to disk (as storage-diffchain's): the copy is an instance's writable file, whose own
     * writes are not forced either and which does not outlive a reboot of its host; a {@code kill -9}
     * still leaves it whole or absent (the page cache outlives the process). One log force fewer
     * for each child of a fork.
     */
    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        verify(stored);
        return copy(stored.kind(), stored.path(), target, false, context);
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        verify(stored);
        return copy(stored.kind(), stored.path(), target, true, context);
    }

    @Override
    public void verify(StoredArtifact stored) throws IOException {
        if (!Files.exists(stored.path())) {
            throw new IOException("the stored artifact " + stored.path() + " is missing");
        }
    }

    /** Removes the artifact and a staging entry left beside it. */
    @Override
    public void delete(StoredArtifact stored) throws IOException {
        Path path = stored.path().toAbsolutePath();
        FileClones.deleteTree(StagedFile.stagingPath(path));
        FileClones.deleteTree(path);
        if (Files.isDirectory(path.getParent())) {
            AtomicFiles.fsyncDirectory(path.getParent());
        }
    }

    /** @param durable whether the copy and its name are forced to disk before this returns */
    private StoredArtifact copy(ArtifactKind kind, Path source, Path target, boolean durable, OperationContext context)
            throws IOException {
        if (!Files.exists(source)) {
            throw new NoSuchFileException(source.toString(), null, "nothing to copy");
        }
        Path absolute = target.toAbsolutePath();
        Files.createDirectories(absolute.getParent());
        context.checkpoint("copying " + source);
        String mode = Files.isDirectory(source) ? copyTree(source, absolute, durable, context)
                : copyFile(source, absolute, durable, context);
        return new StoredArtifact(kind, absolute, mode, mode.equals(MODE_REFLINK) ? 0 : logicalBytes(absolute), null,
                null, 0);
    }

    private String copyFile(Path source, Path target, boolean durable, OperationContext context) throws IOException {
        try (StagedFile staged = StagedFile.beside(target)) {
            String mode = cloneOrCopy(source, staged.path(), context);
            context.checkpoint("putting " + target + " in place");
            if (durable) {
                staged.publish();
            } else {
                staged.publishUnsynced();
            }
            return mode;
        }
    }

    /**
     * Stages the tree and renames it into place. rename(2) would replace an empty folder at the
     * target, so an existing target is refused first.
     */
    private String copyTree(Path source, Path target, boolean durable, OperationContext context) throws IOException {
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileAlreadyExistsException(target.toString(), null, "refusing to replace it");
        }
        Path staging = StagedFile.stagingPath(target);
        FileClones.deleteTree(staging);
        try {
            String mode = cloneOrCopy(source, staging, context);
            context.checkpoint("putting " + target + " in place");
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            if (durable) {
                AtomicFiles.fsyncDirectory(target.getParent());
            }
            return mode;
        } finally {
            FileClones.deleteTree(staging);
        }
    }

    private String cloneOrCopy(Path source, Path staged, OperationContext context) throws IOException {
        return clones.cloneOrCopy(source, staged, () -> HostCommand.timeFor(context.remaining()));
    }

    static long logicalBytes(Path path) throws IOException {
        if (!Files.isDirectory(path)) {
            return Files.size(path);
        }
        try (Stream<Path> all = Files.walk(path)) {
            return all.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).sum();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}
