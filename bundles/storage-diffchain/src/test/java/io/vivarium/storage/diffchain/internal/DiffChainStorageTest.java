package io.vivarium.storage.diffchain.internal;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.files.FileClones;
import io.vivarium.testkit.StorageStrategySuite;
import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;

/**
 * The storage conformance suite for memory images: on the host's filesystem (ext4 here: the root
 * of a chain is copied) and on a loop-mounted XFS, where it must be cloned (skipped with the reason
 * where this host cannot mount one). Verified files are remembered at once (no racy window), so the
 * suite's checks of changed links exercise the invalidation, not a re-read.
 */
class DiffChainStorageTest {

    static final DiffChainStorage STRATEGY = new DiffChainStorage(16, Duration.ZERO);

    /** A RAM file; a diff link's content is what materialising it gives. */
    static final StorageStrategySuite.ArtifactContent MEMORY = new StorageStrategySuite.ArtifactContent() {
        @Override
        public void write(Path path, byte[] content) throws IOException {
            FILE.write(path, content);
        }

        @Override
        public void fill(Path path, long offset, int length, byte value) throws IOException {
            FILE.fill(path, offset, length, value);
        }

        @Override
        public byte[] read(Path path) throws IOException {
            boolean diff;
            try (FileChannel ch = FileChannel.open(path)) {
                diff = DiffFile.looksLikeDiff(ch);
            }
            if (!diff) {
                return Files.readAllBytes(path);
            }
            Path copy = path.resolveSibling("." + path.getFileName() + ".read");
            try {
                STRATEGY.materialise(new StoredArtifact(ArtifactKind.MEMORY, path, null, 0, null, null, 0), copy,
                        OperationContext.until(Instant.now().plus(Duration.ofMinutes(1))));
                return Files.readAllBytes(copy);
            } finally {
                Files.deleteIfExists(copy);
            }
        }
    };

    abstract static class Memory extends StorageStrategySuite {
        @Override
        protected StorageStrategy strategy() {
            return STRATEGY;
        }

        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.MEMORY;
        }

        @Override
        protected ArtifactContent content() {
            return MEMORY;
        }
    }

    @Nested
    class OnTheHost extends Memory {
        @Override
        protected Set<String> modes() {
            return Set.of(DiffChainStorage.MODE_DIFF, FileClones.REFLINK, FileClones.COPY);
        }
    }

    @Nested
    class OnXfs extends Memory {
        private XfsLoopMount xfs;

        @Override
        protected Set<String> modes() {
            return Set.of(DiffChainStorage.MODE_DIFF, FileClones.REFLINK);
        }

        @Override
        protected Path workDir(Path temp) throws IOException {
            xfs = XfsLoopMount.create(temp);
            return xfs.dir();
        }

        @AfterEach
        void unmount() throws IOException {
            if (xfs != null) {
                xfs.close();
            }
        }
    }
}
