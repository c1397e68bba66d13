package io.vivarium.backend.gvisor.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.vivarium.api.spi.OperationContext;

import org.junit.jupiter.api.Assumptions;

/** What the tests that run real containers need: runsc, root, and settings for this host. */
final class GvisorHost {

    static final Path RUNSC = Path.of("/usr/bin/runsc");
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private GvisorHost() {
    }

    /** Skips the calling test, with the reason, where runsc cannot run containers. */
    static void assumeRunsc() {
        Assumptions.assumeTrue(Files.isExecutable(RUNSC), RUNSC + " is missing: apt-get install runsc");
        Assumptions.assumeTrue(isRoot(), "runsc runs containers only as root here");
        String version;
        try {
            version = new Runsc(RUNSC).version();
        } catch (IOException e) {
            throw new AssertionError(RUNSC + " --version failed", e);
        }
        // the whole contract includes checkpoints, which need a runsc that leaves a checkpointed container running
        Assumptions.assumeTrue(Runsc.checkpointsInPlace(version), version + " is older than " + Runsc.IN_PLACE_SINCE
                + ", the oldest runsc that checkpoints a container in place: .ci/run installs Debian 13's");
    }

    private static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** The built root filesystem (build-rootfs.sh), or skips the calling test with the reason. */
    static Path assumeBuiltRootfs() {
        Path rootfs = GvisorSettings.rootfs("", System.getenv()).orElseThrow();
        Assumptions.assumeTrue(Files.isDirectory(rootfs.resolve("usr")),
                "no built root filesystem at " + rootfs + ": run bundles/backend-gvisor/build-rootfs.sh as root "
                        + "(.ci/run builds it, and fails when it cannot)");
        return rootfs;
    }

    /** Settings with the host's /usr as the root filesystem, and the agent binary and links in {@code dir}. */
    static GvisorSettings settings(Path dir) {
        return settings(dir, Optional.empty());
    }

    static GvisorSettings settings(Path dir, Optional<Path> rootfs) {
        return new GvisorSettings(RUNSC, rootfs, 65534, 65534, START_TIMEOUT, dir.resolve("agent-bin"),
                GvisorSettings.defaultLinkDir());
    }

    /** A revision of the backend with the host's /usr as the root filesystem, and the agent binary and links in {@code dir}. */
    static Revision revision(Path dir) {
        return Revision.of(settings(dir));
    }

    static Revision revision(Path dir, Optional<Path> rootfs) {
        return Revision.of(settings(dir, rootfs));
    }

    /** The context of a create or checkpoint: the start timeout and half a minute more. */
    static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(START_TIMEOUT).plusSeconds(30));
    }
}
