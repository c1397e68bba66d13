package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * A root-only overlayfs mount: the directory at {@code merged} shows {@code lower} with every
 * change written to {@code upper} instead (new and changed files copied up, deletions as whiteouts,
 * replaced directories marked opaque).
 */
final class OverlayMount {

    /** The mount option string separates with {@code ,} and {@code :} and escapes with {@code \}. */
    private static final List<Character> OPTION_SYNTAX = List.of(',', ':', '\\');
    private static final int UNMOUNT_ATTEMPTS = 5;
    private static final long UNMOUNT_RETRY_MILLIS = 20;

    private OverlayMount() {
    }

    /**
     * Mounts without syncing the upper layer ({@code volatile}, Linux 5.10+): it is thrown away, so
     * a command's fsyncs need not reach the disk, nor the unmount flush it. Older kernels get a
     * plain mount.
     */
    static void mount(Path lower, Path upper, Path work, Path merged) throws IOException {
        String options = "lowerdir=" + optionValue(lower) + ",upperdir=" + optionValue(upper)
                + ",workdir=" + optionValue(work);
        try {
            HostTools.AS_DAEMON.run("mount", "-t", "overlay", "overlay", "-o", options + ",volatile", merged.toString());
        } catch (IOException noVolatile) {
            try {
                HostTools.AS_DAEMON.run("mount", "-t", "overlay", "overlay", "-o", options, merged.toString());
            } catch (IOException plain) {
                plain.addSuppressed(noVolatile);
                throw plain;
            }
        }
    }

    static String optionValue(Path dir) throws IOException {
        String value = dir.toString();
        for (char c : OPTION_SYNTAX) {
            if (value.indexOf(c) >= 0) {
                throw new IOException("cannot mount an overlay on " + value + ": overlay mount options cannot hold '"
                        + c + "'");
            }
        }
        return value;
    }

    /**
     * Unmounts, retrying while the mount is busy, then detaches it lazily as a last resort (the
     * kernel then frees it when its last user goes).
     */
    static void unmount(Path merged) throws IOException {
        IOException last = null;
        for (int attempt = 0; attempt < UNMOUNT_ATTEMPTS; attempt++) {
            try {
                HostTools.AS_DAEMON.run("umount", merged.toString());
                return;
            } catch (IOException e) {
                last = e;
                if (!ProcFs.isMountPoint(merged)) {
                    return;
                }
                Sleep.briefly(UNMOUNT_RETRY_MILLIS);
            }
        }
        try {
            HostTools.AS_DAEMON.run("umount", "-l", merged.toString());
        } catch (IOException lazy) {
            lazy.addSuppressed(last);
            throw lazy;
        }
    }
}
