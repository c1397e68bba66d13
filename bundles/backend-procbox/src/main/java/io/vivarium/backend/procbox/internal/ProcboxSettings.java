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
 * @param defaultPidsLimit the pids limit of a sandbox created without one
 * @param defaultDiskLimitMib the workspace size of a sandbox created without one
 * @param templateDir where the pre-formatted workspace templates are kept
 * @param agentDir where the guest agent binary is written for the sandboxes to run ({@link AgentBinary})
 * @param workspacePoolSize how many copies of the default workspace template are kept ready ({@link WorkspacePool}); 0 for none
 * @param sandboxPoolSize how many sandboxes of the default spec are kept launched ahead ({@link SandboxPool}); 0 for none
 */
record ProcboxSettings(Path bwrap, int uid, int gid, Path cgroupRoot, boolean userNamespace, int defaultPidsLimit,
        int defaultDiskLimitMib, Path templateDir, Path agentDir, int workspacePoolSize, int sandboxPoolSize) {

    static final Path DEFAULT_CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    static final int DEFAULT_PIDS_LIMIT = 512;
    static final int DEFAULT_DISK_LIMIT_MIB = 1024;
    static final int DEFAULT_WORKSPACE_POOL_SIZE = 0;
    static final int DEFAULT_SANDBOX_POOL_SIZE = 2;

    /** With the default limits and template directory. */
    ProcboxSettings(Path bwrap, int uid, int gid, Path cgroupRoot, boolean userNamespace) {
        this(bwrap, uid, gid, cgroupRoot, userNamespace, DEFAULT_PIDS_LIMIT, DEFAULT_DISK_LIMIT_MIB,
                defaultTemplateDir());
    }

    /**
     * With the agent binary in the JVM's temporary directory, the default workspace pool and no
     * sandbox pool (a test's backend that is never closed leaves no pooled sandbox running).
     */
    ProcboxSettings(Path bwrap, int uid, int gid, Path cgroupRoot, boolean userNamespace, int defaultPidsLimit,
            int defaultDiskLimitMib, Path templateDir) {
        this(bwrap, uid, gid, cgroupRoot, userNamespace, defaultPidsLimit, defaultDiskLimitMib, templateDir,
                defaultAgentDir(), DEFAULT_WORKSPACE_POOL_SIZE, 0);
    }

    /** These settings with a sandbox pool of {@code size}. */
    ProcboxSettings withSandboxPool(int size) {
        return new ProcboxSettings(bwrap, uid, gid, cgroupRoot, userNamespace, defaultPidsLimit, defaultDiskLimitMib,
                templateDir, agentDir, workspacePoolSize, size);
    }

    /** Where the agent binary goes when the framework gives the bundle no data area (and in tests). */
    static Path defaultAgentDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "vivarium-procbox-agent");
    }

    static Path defaultTemplateDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), "vivarium-procbox-templates");
    }

    /** @param agentDir the bundle's own data area, see {@link AgentBinary} */
    static ProcboxSettings from(ProcboxConfig config, Path agentDir) {
        String cgroupRoot = config.cgroup__root().isBlank() ? DEFAULT_CGROUP_ROOT.toString() : config.cgroup__root();
        return new ProcboxSettings(Path.of(config.bwrap__path()), config.sandbox__uid(), config.sandbox__gid(),
                Path.of(cgroupRoot), ProcFs.effectiveUid() != 0, config.default__pids__limit(),
                config.default__disk__limit__mib(),
                config.workspace__template__dir().isBlank() ? defaultTemplateDir()
                        : Path.of(config.workspace__template__dir()),
                agentDir, config.workspace__pool__size(), config.sandbox__pool__size());
    }
}
