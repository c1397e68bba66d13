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

    abstract static class OnTheHost extends StorageStrategySuite {
        @Override
        protected StorageStrategy strategy() {
            return STRATEGY;
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

    abstract static class OnXfs extends StorageStrategySuite {
        private XfsLoopMount xfs;

        @Override
        protected StorageStrategy strategy() {
            return STRATEGY;
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
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.WORKSPACE;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.TREE;
        }
    }

    @Nested
    class DiskOnTheHost extends OnTheHost {
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.DISK;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.FILE;
        }
    }

    @Nested
    class MemoryOnTheHost extends OnTheHost {
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.MEMORY;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.FILE;
        }
    }

    @Nested
    class WorkspaceTreeOnXfs extends OnXfs {
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.WORKSPACE;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.TREE;
        }
    }

    @Nested
    class DiskOnXfs extends OnXfs {
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.DISK;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.FILE;
        }
    }

    @Nested
    class MemoryOnXfs extends OnXfs {
        @Override
        protected ArtifactKind kind() {
            return ArtifactKind.MEMORY;
        }

        @Override
        protected ArtifactContent content() {
            return ArtifactContent.FILE;
        }
    }
}
