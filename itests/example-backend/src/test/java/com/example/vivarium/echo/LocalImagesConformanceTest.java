package com.example.vivarium.echo;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.testkit.FixedStorage;
import io.vivarium.testkit.ImagesSuite;

import org.junit.jupiter.api.AfterAll;

/**
 * example-local's images (its workspace, files only) pass the images kit, as procbox's do, stored
 * by a strategy that copies ({@link CopyingStrategy}) as core's would on a filesystem without
 * reflinks.
 */
class LocalImagesConformanceTest extends ImagesSuite {

    private static final List<LocalRuntime> REVISIONS = new CopyOnWriteArrayList<>();
    /** Each backend object's images seam, made on the same runtime, as DS wires them. */
    private static final Map<SandboxBackend, Images> SEAMS = new ConcurrentHashMap<>();

    @AfterAll
    static void letGoOfRevisions() {
        REVISIONS.forEach(LocalRuntime::close);
        REVISIONS.clear();
        SEAMS.clear();
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        LocalRuntime runtime = new LocalRuntime(stateDir.resolve("agent"));
        REVISIONS.add(runtime);
        LocalBackend backend = new LocalBackend(runtime);
        SEAMS.put(backend, new LocalImages(runtime));
        return backend;
    }

    @Override
    protected Images images(SandboxBackend backend) {
        return SEAMS.get(backend);
    }

    @Override
    protected StorageStrategies storage() {
        return FixedStorage.of(new CopyingStrategy());
    }
}
