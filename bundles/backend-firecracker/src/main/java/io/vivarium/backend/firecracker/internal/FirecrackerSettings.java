package io.vivarium.backend.firecracker.internal;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How this host runs Firecracker microVMs.
 *
 * @param firecracker the firecracker executable
 * @param imageDir where the guest images are
 * @param defaultImage the image a sandbox boots
 * @param memoryMib guest memory
 * @param defaultVcpus virtual CPUs of a sandbox created without vcpus
 * @param workspaceMib the size of a sandbox's workspace disk
 * @param bootTimeout how long a boot may take until the agent answers
 * @param socketDir a short directory for each VMM's API and vsock sockets (a Unix socket's path
 *        is at most 107 bytes; a sandbox's own directory may be longer)
 */
record FirecrackerSettings(Path firecracker, Path imageDir, String defaultImage, int memoryMib, int defaultVcpus,
        int workspaceMib, Duration bootTimeout, Path socketDir) {

    static final int DEFAULT_MEMORY_MIB = 256;
    static final int DEFAULT_WORKSPACE_MIB = 1024;
    static final int DEFAULT_BOOT_TIMEOUT_SECS = 30;

    static FirecrackerSettings from(FirecrackerConfig config) {
        String images = System.getenv("VIVARIUM_IMAGES");
        Path imageDir = !config.image__dir().isBlank() ? Path.of(config.image__dir())
                : images != null && !images.isBlank() ? Path.of(images)
                : Path.of(System.getProperty("user.home"), ".cache", "vivarium", "images");
        return new FirecrackerSettings(Path.of(config.firecracker__path()), imageDir, config.default__image(),
                config.default__memory__mib(), config.default__vcpus(), config.workspace__mib(),
                Duration.ofSeconds(config.boot__timeout__secs()),
                Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker"));
    }
}
