package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The workspace as the daemon walks it: a bind mount with {@code nosymfollow}, through which the
 * kernel refuses to follow any symlink. The daemon lists a live workspace with root's rights while
 * the sandbox's processes keep running; one that swaps a directory for a symlink in the middle of
 * a walk then makes the walk fail with ELOOP instead of leading it onto the host's files.
 */
final class WalkView {
    private static final System.Logger LOG = System.getLogger(WalkView.class.getName());
    private static final String DIR = "view";

    private WalkView() {
    }

    /**
     * The view of the workspace of the sandbox whose private directory is {@code dir}, mounted if
     * it is not yet; the workspace itself where the daemon cannot mount (it is not root).
     */
    static Path ensure(Path dir) {
        Path view = dir.resolve(DIR);
        if (ProcFs.isMountPoint(view)) {
            return view;
        }
        Path workspace = ProcboxInstance.workspaceDir(dir);
        if (ProcFs.effectiveUid() != 0) {
            return workspace;
        }
        try {
            Files.createDirectories(view);
            HostTools.AS_DAEMON.run("mount", "--bind", workspace.toString(), view.toString());
            HostTools.AS_DAEMON.run("mount", "-o", "remount,bind,nosymfollow", view.toString());
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

    /** Unmounts and removes the view; before the sandbox's directory is deleted, which must not walk into it. */
    static void remove(Path dir) throws IOException {
        Path view = dir.resolve(DIR);
        if (ProcFs.isMountPoint(view)) {
            OverlayMount.unmount(view);
        }
        Files.deleteIfExists(view);
    }
}
