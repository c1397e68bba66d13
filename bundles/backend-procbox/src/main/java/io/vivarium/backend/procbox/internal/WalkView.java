package io.vivarium.backend.procbox.internal;

import io.vivarium.common.mounts.MountTable;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The workspace as the daemon walks it: a bind mount with {@code nosymfollow}, through which the
 * kernel refuses to follow any symlink. The daemon lists a live workspace with root's rights while
 * the sandbox's processes keep running; one that swaps a directory for a symlink in the middle of
 * a walk then makes the walk fail with ELOOP instead of leading it onto the host's files.
 */
final class WalkView {
    private static final System.Logger LOG = System.getLogger(WalkView.class.getName());
    private static final String DIR = "view";
    static final String NOSYMFOLLOW = "nosymfollow";

    private WalkView() {
    }

    /**
     * Where the launch of a new sandbox in {@code dir} mounts the view (made empty here), in the
     * launch's own mount namespace, before it binds it on into the sandbox's
     * ({@link SandboxMounts#walkRoot} then checks what it made). Only where {@link #degradation}
     * found views can be made.
     */
    static Path forLaunch(Path dir) throws IOException {
        return Files.createDirectories(dir.resolve(DIR));
    }

    /**
     * The view of the workspace of the sandbox whose private directory is {@code dir}, for a
     * sandbox whose workspace an earlier procbox mounted in the host's namespace: mounted there if
     * it is not yet; the workspace itself where the daemon cannot mount (it is not root).
     */
    static Path ensure(Path dir) {
        Path view = dir.resolve(DIR);
        if (followsNoSymlink(MountTable.at(view))) {
            return view;
        }
        Path workspace = ProcboxInstance.workspaceDir(dir);
        if (ProcFs.effectiveUid() != 0) {
            return workspace;
        }
        try {
            remove(dir);
            Files.createDirectories(view);
            mount(workspace, view);
            return view;
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot mount a nosymfollow view of " + workspace + " (" + e.getMessage()
                    + "); listing it directly");
            try {
                remove(dir);
            } catch (IOException cleanup) {
                LOG.log(Level.WARNING, "cannot remove the half-made view in " + dir + ": " + cleanup.getMessage());
            }
            return workspace;
        }
    }

    /**
     * Why the daemon cannot walk live workspaces through such a view, probed by mounting one on a
     * scratch directory under {@code scratchParent}; empty when it can.
     */
    static Optional<String> degradation(Path scratchParent) {
        String risk = "; a sandbox that swaps a directory for a symlink during a baseline or changes can lead the"
                + " daemon's walk onto host files";
        if (ProcFs.effectiveUid() != 0) {
            return Optional.of("walk degraded: the daemon is not root, so it lists live workspaces without a"
                    + " nosymfollow view" + risk);
        }
        Path probe = null;
        try {
            probe = Files.createTempDirectory(scratchParent, "walk-view-probe-");
            Files.createDirectory(probe.resolve("workspace"));
            Files.createDirectory(probe.resolve(DIR));
            mount(probe.resolve("workspace"), probe.resolve(DIR));
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("walk degraded: cannot mount a nosymfollow view (" + e.getMessage() + ")" + risk);
        } finally {
            if (probe != null) {
                try {
                    remove(probe);
                    Files.deleteIfExists(probe.resolve("workspace"));
                    Files.deleteIfExists(probe);
                } catch (IOException e) {
                    LOG.log(Level.WARNING, "cannot remove the probe " + probe + ": " + e.getMessage());
                }
            }
        }
    }

    /** Bind-mounts {@code workspace} on {@code view} with nosymfollow, and checks the kernel applied it. */
    private static void mount(Path workspace, Path view) throws IOException {
        HostTools.AS_DAEMON.run("mount", "--bind", workspace.toString(), view.toString());
        // mount(8) passes an option the kernel does not know as filesystem data and a bind remount ignores it
        HostTools.AS_DAEMON.run("mount", "-o", "remount,bind," + NOSYMFOLLOW, view.toString());
        if (!followsNoSymlink(MountTable.at(view))) {
            throw new IOException("the kernel did not apply " + NOSYMFOLLOW + " to " + view + " (it needs Linux 5.10+)");
        }
    }

    /** Whether {@code mount} is there and follows no symlink: what makes it a view. */
    static boolean followsNoSymlink(Optional<MountTable.Mount> mount) {
        return mount.map(m -> List.of(m.options().split(",")).contains(NOSYMFOLLOW)).orElse(false);
    }

    /** Unmounts and removes the view; before the sandbox's directory is deleted, which must not walk into it. */
    static void remove(Path dir) throws IOException {
        Path view = dir.resolve(DIR);
        if (ProcFs.isMountPoint(view)) {
            OverlayMount.unmount(view);
        }
        Files.deleteIfExists(view);
    }
}
