package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.storage.diffchain.internal.DiffChainStorage;
import io.vivarium.storage.qcow2.internal.Qcow2Storage;
import io.vivarium.testkit.FixedStorage;
import io.vivarium.testkit.ImagesSuite;

/**
 * QEMU's images (files and memory) pass the images kit on real VMs of the default image, stored as
 * the qemu feature stores them: disks as qcow2 overlays, RAM files through the diff-chain strategy.
 * The kit shares one source VM and one image across the class.
 */
class QemuImagesConformanceTest extends ImagesSuite {

    private static final StorageStrategies STORAGE = FixedStorage.of(new Qcow2Storage(Path.of("/usr/bin/qemu-img")),
            new DiffChainStorage(16, Duration.ofSeconds(2)));
    private static QemuBackend current;

    @BeforeEach
    void needsQemuAndImage() {
        QemuHost.assumeImage("default");
    }

    @AfterAll
    static void letGo() {
        if (current != null) {
            current.close();
            current = null;
        }
    }

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        if (current != null) {
            current.close();
        }
        current = QemuHost.backend(QemuHost.settings());
        return current;
    }

    @Override
    protected StorageStrategies storage() {
        return STORAGE;
    }
}
