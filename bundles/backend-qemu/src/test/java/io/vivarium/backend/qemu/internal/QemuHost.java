package io.vivarium.backend.qemu.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.storage.diffchain.internal.DiffChainStorage;
import io.vivarium.storage.qcow2.internal.Qcow2Storage;
import io.vivarium.testkit.FixedStorage;

import org.junit.jupiter.api.Assumptions;

/** What the tests that boot VMs need of this host, and the settings they run with. */
final class QemuHost {

    static final Path QEMU = Path.of("/usr/bin/qemu-system-x86_64");
    static final Path QEMU_IMG = Path.of("/usr/bin/qemu-img");
    /** The strategies of the qemu feature, as core would hand them: disks as qcow2 overlays, RAM files as diff chains. */
    static final StorageStrategies STORAGE = FixedStorage.of(new Qcow2Storage(QEMU_IMG),
            new DiffChainStorage(16, Duration.ofSeconds(2)));

    private QemuHost() {
    }

    /** The default settings on the images of {@code $VIVARIUM_IMAGES} (or the default image directory). */
    static QemuSettings settings() {
        return new QemuSettings(QEMU, QemuSettings.defaultImageDir(System.getenv()), "default",
                QemuSettings.DEFAULT_MEMORY_MIB, 1, Duration.ofSeconds(QemuSettings.DEFAULT_BOOT_TIMEOUT_SECS),
                QemuSettings.defaultLinkDir(), QemuSettings.defaultScratchDir());
    }

    /** A revision of the backend on this host, as DS would wire its components. */
    static Revision revision(QemuSettings settings) {
        return Revision.of(new QemuRuntime(settings, Accelerator.detect(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm"))));
    }

    /** Skips the test unless QEMU and the image {@code variant} are here. */
    static void assumeImage(String variant) {
        Assumptions.assumeTrue(Files.isExecutable(QEMU) && Files.isExecutable(QEMU_IMG),
                "qemu-system-x86_64 and qemu-img are not installed (apt-get install qemu-system-x86 qemu-utils)");
        Path dir = settings().imageDir();
        Assumptions.assumeTrue(Files.isDirectory(dir.resolve(variant)), () -> "no guest image " + variant + " in "
                + dir + ": build it with guest-agent/image/build-image.sh --out " + dir + " --variant " + variant);
    }

    /** The components of one revision: the runtime, the backend and its seams; closing it is a deactivation. */
    record Revision(QemuRuntime runtime, QemuBackend backend, QemuImages images, QemuCheckpoints checkpoints,
            QemuPower power, QemuPause pause, QemuHibernation hibernation) implements AutoCloseable {

        static Revision of(QemuRuntime runtime) {
            return new Revision(runtime, new QemuBackend(runtime), new QemuImages(runtime), new QemuCheckpoints(runtime),
                    new QemuPower(runtime), new QemuPause(runtime), new QemuHibernation(runtime));
        }

        /** Creates as core does, with the qemu feature's storage and the time a boot may take. */
        QemuInstance create(InstanceSpec spec) {
            return (QemuInstance) backend.create(spec, STORAGE, OperationContext.until(Instant.now()
                    .plus(runtime.settings().bootTimeout()).plus(QemuLauncher.TOOL_TIMEOUT)));
        }

        /** The revision whose backend is {@code backend}, given the one a test holds. */
        Revision of(Object backend) {
            if (backend != this.backend) {
                throw new IllegalStateException("not the backend of this revision: " + backend);
            }
            return this;
        }

        @Override
        public void close() {
            runtime.close();
        }
    }
}
