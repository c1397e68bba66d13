package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.storage.reflink.internal.ReflinkStrategyComponent;
import io.vivarium.testkit.ImagesSuite;
import io.vivarium.testkit.FixedStorage;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/**
 * procbox's images (its workspace, files only) pass the images kit, stored by the reflink strategy
 * as core would choose it (copies on this host's ext4).
 */
class ProcboxImagesConformanceTest extends ImagesSuite {

    private static final StorageStrategy REFLINK = new ReflinkStrategyComponent();
    private static final List<Procbox> REVISIONS = new CopyOnWriteArrayList<>();

    @BeforeEach
    void requireBubblewrapAndRoot() {
        Assumptions.assumeTrue(ProcboxSandboxTest.runnable(), "needs bubblewrap and root");
    }

    @AfterAll
    static void closeRevisions() {
        REVISIONS.forEach(Procbox::close);
        REVISIONS.clear();
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        Procbox procbox = Procbox.root();
        REVISIONS.add(procbox);
        return procbox.backend();
    }

    /** The images seam made on the same runtime as {@code backend}, as DS wires them. */
    @Override
    protected Images images(SandboxBackend backend) {
        return REVISIONS.stream().filter(p -> p.backend() == backend).findFirst().orElseThrow().images();
    }

    @Override
    protected StorageStrategies storage() {
        return FixedStorage.of(REFLINK);
    }
}
