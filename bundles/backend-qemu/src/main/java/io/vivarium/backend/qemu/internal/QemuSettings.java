package io.vivarium.backend.qemu.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * How this host runs VMs.
 *
 * @param qemu the qemu-system-x86_64 executable
 * @param imageDir where the guest images are
 * @param defaultImage the image of a sandbox created without one
 * @param defaultMemoryMib guest memory of a sandbox created without a memory limit
 * @param defaultVcpus virtual CPUs of a sandbox created without vcpus
 * @param bootTimeout how long a boot may take until the agent answers
 * @param linkDir a short directory for the links through which the VMs' sockets are reached
 * @param scratchDir a directory in memory (tmpfs) for what a VM needs only while its QEMU runs: the
 *        RAM state of its checkpoints
 */
record QemuSettings(Path qemu, Path imageDir, String defaultImage, int defaultMemoryMib,
        int defaultVcpus, Duration bootTimeout, Path linkDir, Path scratchDir) {

    static final int DEFAULT_MEMORY_MIB = 256;
    static final int DEFAULT_BOOT_TIMEOUT_SECS = 60;

    static QemuSettings from(QemuConfig config) {
        return new QemuSettings(Path.of(config.qemu__path()),
                config.image__dir().isBlank() ? defaultImageDir(System.getenv()) : Path.of(config.image__dir()),
                config.default__image(), config.default__memory__mib(), config.default__vcpus(),
                Duration.ofSeconds(config.boot__timeout__secs()), defaultLinkDir(), defaultScratchDir());
    }

    /** {@code $VIVARIUM_IMAGES}, else {@code ~/.cache/vivarium/images}: where {@code build-image.sh} and CI put them. */
    static Path defaultImageDir(Map<String, String> env) {
        String dir = env.get("VIVARIUM_IMAGES");
        return dir != null && !dir.isBlank() ? Path.of(dir)
                : Path.of(System.getProperty("user.home"), ".cache", "vivarium", "images");
    }

    static Path defaultLinkDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "vivarium-qemu");
    }

    /** {@code /dev/shm} (tmpfs on Linux), else the temporary directory. */
    static Path defaultScratchDir() {
        Path shm = Path.of("/dev/shm");
        return (Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")))
                .resolve("vivarium-qemu-" + ProcessHandle.current().info().user().orElse("daemon"));
    }

    QemuSettings withBootTimeout(Duration timeout) {
        return new QemuSettings(qemu, imageDir, defaultImage, defaultMemoryMib, defaultVcpus, timeout, linkDir,
                scratchDir);
    }

    QemuSettings withImageDir(Path dir) {
        return new QemuSettings(qemu, dir, defaultImage, defaultMemoryMib, defaultVcpus, bootTimeout, linkDir,
                scratchDir);
    }
}
