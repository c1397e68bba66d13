package io.vivarium.backend.qemu.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import io.vivarium.storage.qcow2.internal.Qcow2Storage;

import org.junit.jupiter.api.Assumptions;

/** What the tests that boot VMs need of this host, and the settings they run with. */
final class QemuHost {

    static final Path QEMU = Path.of("/usr/bin/qemu-system-x86_64");
    static final Path QEMU_IMG = Path.of("/usr/bin/qemu-img");

    private QemuHost() {
    }

    /** The default settings on the images of {@code $VIVARIUM_IMAGES} (or the default image directory). */
    static QemuSettings settings() {
        return new QemuSettings(QEMU, QemuSettings.defaultImageDir(System.getenv()), "default",
                QemuSettings.DEFAULT_MEMORY_MIB, 1, Duration.ofSeconds(QemuSettings.DEFAULT_BOOT_TIMEOUT_SECS),
                QemuSettings.defaultLinkDir(), QemuSettings.defaultScratchDir());
    }

    static QemuBackend backend(QemuSettings settings) {
        return new QemuBackend(settings, Accelerator.detect(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm")),
                DiskStorage.of(new Qcow2Storage(QEMU_IMG)));
    }

    /** Skips the test unless QEMU and the image {@code variant} are here. */
    static void assumeImage(String variant) {
        Assumptions.assumeTrue(Files.isExecutable(QEMU) && Files.isExecutable(QEMU_IMG),
                "qemu-system-x86_64 and qemu-img are not installed (apt-get install qemu-system-x86 qemu-utils)");
        Path dir = settings().imageDir();
        Assumptions.assumeTrue(Files.isDirectory(dir.resolve(variant)), () -> "no guest image " + variant + " in "
                + dir + ": build it with guest-agent/image/build-image.sh --out " + dir + " --variant " + variant);
    }
}
