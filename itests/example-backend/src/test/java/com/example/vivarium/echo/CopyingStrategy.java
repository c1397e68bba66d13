package com.example.vivarium.echo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

/**
 * A storage strategy for the tests that copies workspace trees in full, as the daemon's reflink
 * strategy does where the filesystem cannot clone (this module may use api alone, not that
 * bundle). Every copy is staged beside its target and renamed into place, as the contract asks,
 * and a failed one leaves nothing behind.
 */
final class CopyingStrategy implements StorageStrategy {

    static final String MODE = "copy";

    @Override
    public String name() {
        return "test-copy";
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return Set.of(ArtifactKind.WORKSPACE);
    }

    @Override
    public Set<String> modes() {
        return Set.of(MODE);
    }

    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return kind == ArtifactKind.WORKSPACE;
    }

    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        return new StoredArtifact(kind, target, MODE, copy(source, target), null, null, 0);
    }

    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return new StoredArtifact(stored.kind(), target, MODE, copy(stored.path(), target), null, null, 0);
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return materialise(stored, target, context);
    }

    @Override
    public void verify(StoredArtifact stored) throws IOException {
        if (!Files.isDirectory(stored.path())) {
            throw new IOException(stored.path() + " is missing");
        }
    }

    @Override
    public void delete(StoredArtifact stored) throws IOException {
        deleteTree(stored.path());
    }

    /** Copies the tree {@code from} to {@code to} (which must not exist) through a staging directory; returns the bytes. */
    private static long copy(Path from, Path to) throws IOException {
        if (!Files.isDirectory(from, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(from + " is not a directory");
        }
        Path staging = to.resolveSibling("." + to.getFileName() + ".staging");
        long bytes = 0;
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                Path copy = staging.resolve(from.relativize(p).toString());
                Files.copy(p, copy, StandardCopyOption.COPY_ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
                if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                    bytes += Files.size(p);
                }
            }
            Files.move(staging, to, StandardCopyOption.ATOMIC_MOVE);
            return bytes;
        } catch (IOException | UncheckedIOException e) {
            deleteTree(staging);
            throw e instanceof UncheckedIOException u ? u.getCause() : (IOException) e;
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            List<Path> all = files.sorted(Comparator.reverseOrder()).toList();
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        }
    }
}
