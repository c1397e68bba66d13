package io.vivarium.backend.gvisor.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.storage.reflink.internal.ReflinkStrategyComponent;
import io.vivarium.testkit.FixedStorage;
import io.vivarium.testkit.ImagesSuite;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * gVisor's images (a runsc checkpoint and the workspace: files and memory) pass the images kit on
 * real containers of the host layout, stored by the reflink strategy as core would choose it
 * (copies on this host's ext4).
 */
class GvisorImagesConformanceTest extends ImagesSuite {

    private static final StorageStrategies STORAGE = FixedStorage.of(new ReflinkStrategyComponent());
    private static final List<Revision> REVISIONS = new CopyOnWriteArrayList<>();

    @BeforeEach
    void needsRunsc() {
        GvisorHost.assumeRunsc();
    }

    @AfterAll
    static void closeRevisions() {
        REVISIONS.forEach(Revision::close);
        REVISIONS.clear();
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        Revision revision = GvisorHost.revision(stateDir);
        REVISIONS.add(revision);
        return revision.backend();
    }

    @Override
    protected Images images(SandboxBackend backend) {
        return Revision.of(backend, REVISIONS).images();
    }

    @Override
    protected StorageStrategies storage() {
        return STORAGE;
    }
}
