package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;

/**
 * How this host runs sandboxes.
 *
 * @param bwrap the bubblewrap executable
 * @param uid host uid of sandboxed processes (ignored with {@code userNamespace})
 * @param gid host gid of sandboxed processes (ignored with {@code userNamespace})
 * @param cgroupRoot where the cgroup filesystems are mounted
 * @param userNamespace true when the daemon is not root: sandboxes then get their own user
 *        namespace and run as the daemon's uid
 */
record ProcboxSettings(Path bwrap, int uid, int gid, Path cgroupRoot, boolean userNamespace) {

    static final Path DEFAULT_CGROUP_ROOT = Path.of("/sys/fs/cgroup");

    static ProcboxSettings from(ProcboxConfig config) {
        String cgroupRoot = config.cgroup_root().isBlank() ? DEFAULT_CGROUP_ROOT.toString() : config.cgroup_root();
        return new ProcboxSettings(Path.of(config.bwrap_path()), config.sandbox_uid(), config.sandbox_gid(),
                Path.of(cgroupRoot), ProcFs.effectiveUid() != 0);
    }
}
