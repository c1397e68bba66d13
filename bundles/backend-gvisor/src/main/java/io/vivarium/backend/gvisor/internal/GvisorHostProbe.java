package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What this host offers gVisor containers: runsc present, runnable and (for checkpoints) new
 * enough, a daemon running as root, the root filesystem built; and the details a person reads in
 * {@code GET /v1/backends}. Checked on every call, so installing runsc or building the root
 * filesystem makes the backend available without a restart.
 */
final class GvisorHostProbe {

    private final GvisorSettings settings;
    private final Runsc runsc;
    private volatile String version;

    GvisorHostProbe(GvisorSettings settings, Runsc runsc) {
        this.settings = settings;
        this.runsc = runsc;
    }

    Availability availability() {
        if (!Files.isExecutable(settings.runsc())) {
            return Availability.no(settings.runsc() + " is missing: apt-get install runsc");
        }
        if (!isRoot()) {
            return Availability.no("runsc needs the daemon to run as root");
        }
        Optional<Path> rootfs = settings.rootfs();
        if (rootfs.isPresent() && !Files.isDirectory(rootfs.get().resolve("usr"))) {
            return Availability.no("no root filesystem at " + rootfs.get() + ": build it with "
                    + "bundles/backend-gvisor/build-rootfs.sh, or set rootfs (a directory, or 'host' for the host's /usr)");
        }
        if (version == null) {
            try {
                version = runsc.version();
            } catch (IOException e) {
                return Availability.no(settings.runsc() + " does not run: " + e.getMessage());
            }
        }
        return Availability.yes();
    }

    /** A 503 with the reason unless the host can run containers now. */
    void requireAvailable() {
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
    }

    private static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** {@code runsc --version}'s first line, as {@link #availability} read it; null while runsc does not run. */
    String runscVersion() {
        availability();
        return version;
    }

    /** Refuses a checkpoint of a running container where runsc would restart it instead of leaving it running. */
    void requireInPlaceCheckpoints() {
        String version = runscVersion();
        if (!Runsc.checkpointsInPlace(version)) {
            throw ApiException.notImplemented("this runsc (" + version + ") cannot checkpoint a running container and "
                    + "leave it running (it restarts it); install runsc " + Runsc.IN_PLACE_SINCE + " or newer (Debian 13's "
                    + "package) or set runsc_path to one");
        }
    }

    Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_PLATFORM, Runsc.PLATFORM_REASON);
        d.put(SandboxBackend.DETAIL_ISOLATION, "a gVisor sandbox per container (" + (version == null ? "runsc" : version)
                + "); network none: loopback alone; egress: runsc's own network stack over a veth pair to the host, "
                + "filtered by the host's nftables (docs/network.md)");
        d.put(SandboxBackend.DETAIL_AGENT, "vivarium-agent as the container's process 1, on a Unix socket bound in from "
                + "the host");
        d.put("rootfs", settings.rootfs().map(p -> p + " (read-only)")
                .orElse("the host's /usr, read-only (rootfs=host)"));
        d.put("sandbox_user", "uid " + settings.uid() + ", gid " + settings.gid());
        d.put("images", "files and memory: a snapshot or branch is a runsc checkpoint (every process's memory, /tmp) "
                + "and the workspace copied while the container is paused, which then runs on; a child is restored "
                + "from the checkpoint with its own copy of the workspace; the root filesystem is shared, read-only; "
                + "needs runsc " + Runsc.IN_PLACE_SINCE + " or newer");
        d.put("not_yet", "pids_limit and disk_limit_mib (not listed in its capabilities: a create naming them is a 400)");
        return d;
    }
}
