package io.vivarium.storage.reflink.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.testkit.StorageStrategySuite;
import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;

/**
 * The storage conformance suite for every kind the strategy claims: on the host's filesystem
 * (ext4 here: the honest copy, either mode allowed) and on a loop-mounted XFS, where every result
 * must be a clone (skipped with the reason where this host cannot mount one).
 */
class ReflinkStorageTest {

    private static final ReflinkStrategy STRATEGY = new ReflinkStrategy();

    abstract static class OfKind extends StorageStrategySuite {
        private final ArtifactKind kind;

        OfKind(ArtifactKind kind) {
            this.kind = kind;
        }

        @Override
        protected StorageStrategy strategy() {
            return STRATEGY;
        }

        @Override
        protected ArtifactKind kind() {
            return kind;
        }
    }

    abstract static class OnTheHost extends OfKind {
        OnTheHost(ArtifactKind kind) {
            super(kind);
        }

        @Override
        protected Set<String> modes() {
            return Set.of(ReflinkStrategy.MODE_REFLINK, ReflinkStrategy.MODE_COPY);
        }

        @Override
        protected boolean checksFallback() {
            return true;
        }
    }

    abstract static class OnXfs extends OfKind {
        private XfsLoopMount xfs;

        OnXfs(ArtifactKind kind) {
            super(kind);
        }

        @Override
        protected Set<String> modes() {
            return Set.of(ReflinkStrategy.MODE_REFLINK);
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

    @Nested
    class WorkspaceTreeOnTheHost extends OnTheHost {
        WorkspaceTreeOnTheHost() {
            super(ArtifactKind.WORKSPACE);
        }
    }

    @Nested
    class DiskOnTheHost extends OnTheHost {
        DiskOnTheHost() {
            super(ArtifactKind.DISK);
        }
    }

    @Nested
    class MemoryOnTheHost extends OnTheHost {
        MemoryOnTheHost() {
            super(ArtifactKind.MEMORY);
        }
    }

    @Nested
    class WorkspaceTreeOnXfs extends OnXfs {
        WorkspaceTreeOnXfs() {
            super(ArtifactKind.WORKSPACE);
        }
    }

    @Nested
    class DiskOnXfs extends OnXfs {
        DiskOnXfs() {
            super(ArtifactKind.DISK);
        }
    }

    @Nested
    class MemoryOnXfs extends OnXfs {
        MemoryOnXfs() {
            super(ArtifactKind.MEMORY);
        }
    }
}
