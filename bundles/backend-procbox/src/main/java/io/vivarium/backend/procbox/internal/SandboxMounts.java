package io.vivarium.backend.procbox.internal;

import io.vivarium.common.mounts.MountTable;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How the daemon reaches the mounts of a sandbox that has them in its own mount namespace only
 * ({@link ProcboxRecord#privateMounts}): through {@code /proc/PID/root} of its init, whose mount
 * table ({@code /proc/PID/mountinfo}, a dozen lines) says what is mounted there. The host's mount
 * table holds none of them, so it does not grow with the sandboxes that every launch copies it for.
 */
final class SandboxMounts {

    private static final System.Logger LOG = System.getLogger(SandboxMounts.class.getName());
    private static final Path SYS_BLOCK = Path.of("/sys/block");
    private static final String LOOP_DEVICES = "/dev/loop";

    private SandboxMounts() {
    }

    /**
     * The workspace as the daemon's walks read it: the {@link WalkView} the launch bound at
     * {@value SandboxCommands#WALK_VIEW}, once the sandbox's mount table shows it follows no
     * symlink; else (the host cannot make such a view, or bwrap dropped the option) the workspace
     * itself, and a warning.
     */
    static Path walkRoot(InitProcess init, String sandboxId) {
        if (WalkView.followsNoSymlink(MountTable.at(init.pid(), Path.of(SandboxCommands.WALK_VIEW)))) {
            return init.throughRoot(Path.of(SandboxCommands.WALK_VIEW));
        }
        LOG.log(Level.WARNING, "sandbox " + sandboxId + " has no " + WalkView.NOSYMFOLLOW + " view of its workspace at "
                + SandboxCommands.WALK_VIEW + "; listing the workspace directly");
        return workspace(init);
    }

    /** The sandbox's workspace, its own mount, as the host reaches it. */
    static Path workspace(InitProcess init) {
        return init.throughRoot(Path.of(SandboxCommands.WORKSPACE));
    }

    /**
     * Mounts the sandbox's workspace image, already mounted in the sandbox, at {@code at} in the
     * host's mount namespace too (for a dry-run's overlay, whose lower layer must be there): the
     * same loop device, so the same file system, not a second one writing the same file. The
     * device is the one the sandbox's table names at {@value SandboxCommands#WORKSPACE}; once the
     * mount holds it, its backing file must be {@code image}, or a device freed by a sandbox that
     * ended meanwhile and taken by another would have been mounted, and is unmounted again.
     */
    static Path mountWorkspace(InitProcess init, Path image, Path at) throws IOException {
        String device = MountTable.at(init.pid(), Path.of(SandboxCommands.WORKSPACE)).map(MountTable.Mount::source)
                .filter(source -> source.startsWith(LOOP_DEVICES))
                .orElseThrow(() -> new IOException("the sandbox's table shows no loop device at "
                        + SandboxCommands.WORKSPACE + " (has it ended?)"));
        Files.createDirectory(at);
        HostTools.AS_DAEMON.run("mount", "-t", "ext4", "-o", "nosuid,nodev", "--", device, at.toString());
        Path backing = SYS_BLOCK.resolve(Path.of(device).getFileName()).resolve("loop").resolve("backing_file");
        String backs = Files.readString(backing).strip();
        if (!backs.equals(image.toRealPath().toString())) {
            OverlayMount.unmount(at);
            throw new IOException(device + " now backs " + backs + ", not the sandbox's " + image + " (has it ended?)");
        }
        return at;
    }
}
