package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.testkit.ImagesSuite;

/**
 * QEMU's images (files and memory) pass the images kit on real VMs of the default image, stored as
 * the qemu feature stores them: disks as qcow2 overlays, RAM files through the diff-chain strategy.
 * The kit shares one source VM and one image across the class.
 */
class QemuImagesConformanceTest extends ImagesSuite {

    private static QemuHost.Revision current;

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
        current = QemuHost.revision(QemuHost.settings());
        return current.backend();
    }

    @Override
    protected StorageStrategies storage() {
        return QemuHost.STORAGE;
    }

    @Override
    protected Images images(SandboxBackend backend) {
        return current.of(backend).images();
    }
}
