package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * Workspaces of a fixed size: each sandbox's workspace is a loop-mounted ext4 image of its own,
 * so filling it gives the sandbox ENOSPC and leaves the host's disk alone. Making one costs a
 * sparse copy of an empty, pre-formatted template (a few hundred KiB of metadata, whatever the
 * size) and a loop mount, both done by the launch's shell; an image only takes host disk for what
 * is written into it. Templates are made once per size and owner, without a journal (a sandbox
 * does not outlive its host) and without {@code lost+found}, which would show in every listing.
 */
final class WorkspaceImages {

    private static final Path LOOP_CONTROL = Path.of("/dev/loop-control");
    private static final List<String> TOOLS = List.of("mkfs.ext4", "debugfs", "mount", "umount", "cp");
    private static final List<Path> TOOL_DIRS = List.of(Path.of("/usr/sbin"), Path.of("/usr/bin"), Path.of("/sbin"),
            Path.of("/bin"));
    private static final String IMAGE = "workspace.ext4";

    private final Path templateDir;
    private final String unsupportedReason;

    private WorkspaceImages(Path templateDir, String unsupportedReason) {
        this.templateDir = templateDir;
        this.unsupportedReason = unsupportedReason;
    }

    /** Checks what loop-mounted workspaces need on this host; never fails. */
    static WorkspaceImages detect(Path templateDir, boolean root) {
        if (!root) {
            return new WorkspaceImages(templateDir, "the daemon is not root, so it cannot loop-mount workspaces");
        }
        if (!Files.exists(LOOP_CONTROL)) {
            return new WorkspaceImages(templateDir, LOOP_CONTROL + " is missing: the kernel has no loop devices");
        }
        for (String tool : TOOLS) {
            if (TOOL_DIRS.stream().noneMatch(dir -> Files.isExecutable(dir.resolve(tool)))) {
                return new WorkspaceImages(templateDir, tool + " is missing: apt-get install e2fsprogs util-linux");
            }
        }
        return new WorkspaceImages(templateDir, null);
    }

    boolean supported() {
        return unsupportedReason == null;
    }

    /** For operators: how workspace sizes are enforced, or why they are not. */
    String describe() {
        return supported() ? "a loop-mounted ext4 image per sandbox" : "no size limit (" + unsupportedReason() + ")";
    }

    String unsupportedReason() {
        return unsupportedReason;
    }

    /** The image of the sandbox whose private directory is {@code dir}, from a template made now if needed. */
    WorkspaceImage forSandbox(Path dir, int sizeMib, int uid, int gid) throws IOException {
        return new WorkspaceImage(template(sizeMib, uid, gid), dir.resolve(IMAGE));
    }

    /** Formats the template once; concurrent creates each format their own and the first rename wins. */
    private Path template(int sizeMib, int uid, int gid) throws IOException {
        Path template = templateDir.resolve("workspace-" + sizeMib + "m-" + uid + "-" + gid + ".ext4");
        if (Files.isRegularFile(template)) {
            return template;
        }
        Files.createDirectories(templateDir);
        Path partial = Files.createTempFile(templateDir, "partial-", ".ext4");
        try {
            try (RandomAccessFile file = new RandomAccessFile(partial.toFile(), "rw")) {
                file.setLength(sizeMib * 1024L * 1024L);
            }
            HostTools.AS_DAEMON.run("mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0",
                    "-E", "lazy_itable_init=1,nodiscard,root_owner=" + uid + ":" + gid, partial.toString());
            HostTools.AS_DAEMON.run("debugfs", "-w", "-R", "rmdir lost+found", partial.toString());
            Files.move(partial, template, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return template;
        } finally {
            Files.deleteIfExists(partial);
        }
    }

    /**
     * Unmounts a sandbox's workspace directory, if its image is mounted there. Once the sandbox's processes are gone the kernel frees the loop device with it.
     */
    static void unmount(Path workDir) throws IOException {
        if (ProcFs.isMountPoint(workDir)) {
            OverlayMount.unmount(workDir);
        }
    }
}
