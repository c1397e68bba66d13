package io.vivarium.kit.vmm;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How a host runs one VMM's guests, read from the backend's configuration.
 *
 * @param binary the VMM's executable
 * @param imageDir where the guest images are (guest-agent/image)
 * @param defaultImage the image a sandbox created without one boots
 * @param memoryMib guest memory of a sandbox created without {@code memory_limit_mib}
 * @param defaultVcpus virtual CPUs of a sandbox created without {@code vcpus}
 * @param workspaceMib the size of a workspace disk made without {@code disk_limit_mib}
 * @param bootTimeout how long a boot may take until the agent answers
 * @param socketDir a short directory for each VMM's API and vsock sockets (a Unix socket's path has
 *        at most 107 bytes; a sandbox's own directory may be longer)
 */
public record VmmSettings(Path binary, Path imageDir, String defaultImage, int memoryMib, int defaultVcpus,
        int workspaceMib, Duration bootTimeout, Path socketDir) {

    /** {@code dir} if not blank, else {@code $VIVARIUM_IMAGES}, else {@code ~/.cache/vivarium/images}: where build-image.sh puts them. */
    public static Path imageDir(String dir) {
        String env = System.getenv("VIVARIUM_IMAGES");
        return !dir.isBlank() ? Path.of(dir) : env != null && !env.isBlank() ? Path.of(env)
                : Path.of(System.getProperty("user.home"), ".cache", "vivarium", "images");
    }
}
