package io.vivarium.storage.reflink.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

/**
 * Copy-on-write clones of files and directory trees where the target's filesystem has them (XFS
 * with reflink, btrfs), an honest full copy elsewhere: every result says {@code reflink} or
 * {@code copy}. A copy is staged beside its target ({@code .<name>.staging-<uuid>}) and renamed
 * into place last, so a {@code kill -9} leaves the whole artifact or a staging entry beside
 * it, which goes with the directory its owner deletes. Artifacts stand alone: no parents, no chains.
 */
final class ReflinkStrategy implements StorageStrategy {

    static final String NAME = "reflink";
    static final String MODE_REFLINK = "reflink";
    static final String MODE_COPY = "copy";

    private static final System.Logger LOG = System.getLogger(ReflinkStrategy.class.getName());
    private static final String STAGING = ".staging-";
    private static final Duration NO_DEADLINE_TIMEOUT = Duration.ofMinutes(30);

    private final ReflinkProbe probe = new ReflinkProbe();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return EnumSet.allOf(ArtifactKind.class);
    }

    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return probe.clones(dir);
    }

    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        return copy(kind, source, target, context);
    }

    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        verify(stored);
        return copy(stored.kind(), stored.path(), target, context);
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        verify(stored);
        return copy(stored.kind(), stored.path(), target, context);
    }

    @Override
    public void verify(StoredArtifact stored) throws IOException {
        if (!Files.exists(stored.path())) {
            throw new IOException("the stored artifact " + stored.path() + " is missing");
        }
    }

    @Override
    public void delete(StoredArtifact stored) throws IOException {
        deleteTree(stored.path());
    }

    /** Clones where the target's filesystem can, else (or when the clone fails, e.g. across filesystems) copies. */
    private StoredArtifact copy(ArtifactKind kind, Path source, Path target, OperationContext context) throws IOException {
        if (Files.exists(target)) {
            throw new IOException(target + " exists already");
        }
        Path dir = target.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path staging = dir.resolve("." + target.getFileName() + STAGING + UUID.randomUUID());
        try {
            String mode = MODE_COPY;
            if (probe.clones(dir)) {
                try {
                    CopyCommand.copy(source, staging, true, timeout(context));
                    mode = MODE_REFLINK;
                } catch (IOException e) {
                    LOG.log(Level.INFO, "no clone of " + source + " (" + e.getMessage() + "); copying it");
                    deleteTree(staging);
                }
            }
            if (mode.equals(MODE_COPY)) {
                CopyCommand.copy(source, staging, false, timeout(context));
            }
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            return new StoredArtifact(kind, target, mode, mode.equals(MODE_REFLINK) ? 0 : logicalBytes(target), null,
                    null, 0);
        } finally {
            deleteTree(staging);
        }
    }

    private static Duration timeout(OperationContext context) {
        if (context == null) {
            return NO_DEADLINE_TIMEOUT;
        }
        Duration left = context.remaining();
        if (left.isZero()) {
            context.checkpoint("copying");
        }
        return left.isZero() ? Duration.ofSeconds(1) : left;
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

    static void deleteTree(Path path) throws IOException {
        if (!Files.exists(path, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(path, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
