package io.vivarium.backend.gvisor.internal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.spi.InstanceSpec;

/**
 * How this host runs gVisor containers.
 *
 * @param runsc the runsc executable
 * @param rootfs the containers' root filesystem, or empty for the host's {@code /usr} layout
 * @param uid uid of the sandboxed processes
 * @param gid gid of the sandboxed processes
 * @param startTimeout how long a start may take until the agent answers
 * @param agentDir where the agent binary is written for the containers to run
 * @param linkDir a short directory for the links through which the agents' sockets are reached
 */
record GvisorSettings(Path runsc, Optional<Path> rootfs, int uid, int gid, Duration startTimeout, Path agentDir,
        Path linkDir) {

    static final int DEFAULT_START_TIMEOUT_SECS = 30;
    static final String HOST_ROOTFS = "host";
    /** The directory below the images directory that build-rootfs.sh links to its newest build. */
    static final String DEFAULT_ROOTFS_NAME = "gvisor-rootfs";

    static GvisorSettings from(GvisorConfig config, Path agentDir) {
        return new GvisorSettings(Path.of(config.runsc__path()), rootfs(config.rootfs(), System.getenv()),
                config.sandbox__uid(), config.sandbox__gid(), Duration.ofSeconds(config.start__timeout__secs()),
                agentDir, defaultLinkDir());
    }

    static Optional<Path> rootfs(String configured, Map<String, String> env) {
        if (configured.equals(HOST_ROOTFS)) {
            return Optional.empty();
        }
        if (!configured.isBlank()) {
            return Optional.of(Path.of(configured));
        }
        String images = env.get("VIVARIUM_IMAGES");
        Path dir = images != null && !images.isBlank() ? Path.of(images)
                : Path.of(System.getProperty("user.home"), ".cache", "vivarium", "images");
        return Optional.of(dir.resolve(DEFAULT_ROOTFS_NAME));
    }

    static Path defaultAgentDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "vivarium-gvisor-agent");
    }

    static Path defaultLinkDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "vivarium-gvisor");
    }

    /** The uid a container of {@code spec} runs as: its template image's user's, else (or for root's) the sandbox user. */
    int uidOf(InstanceSpec spec) {
        return spec.root() == null ? uid : spec.root().uidOr(uid);
    }

    /** The gid a container of {@code spec} runs as, as {@link #uidOf}. */
    int gidOf(InstanceSpec spec) {
        return spec.root() == null ? gid : spec.root().gidOr(gid);
    }
}
