package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.System.Logger.Level;
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
final class WorkspaceImages implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(WorkspaceImages.class.getName());

    private static final Path LOOP_CONTROL = Path.of("/dev/loop-control");
    private static final List<String> TOOLS = List.of("mkfs.ext4", "debugfs", "mount", "umount", "cp");
    private static final List<Path> TOOL_DIRS = List.of(Path.of("/usr/sbin"), Path.of("/usr/bin"), Path.of("/sbin"),
            Path.of("/bin"));
    static final String IMAGE = "workspace.ext4";

    private final Path templateDir;
    private final String unsupportedReason;
    /** Ready copies of the default template; null without a pool. */
    private final WorkspacePool pool;

    private WorkspaceImages(Path templateDir, String unsupportedReason, WorkspacePool pool) {
        this.templateDir = templateDir;
        this.unsupportedReason = unsupportedReason;
        this.pool = pool;
    }

    /**
     * Checks what loop-mounted workspaces need on this host, and opens a pool of {@code poolSize}
     * ready copies of the default template where they are supported; never fails.
     */
    static WorkspaceImages detect(Path templateDir, boolean root, int poolSize) {
        if (!root) {
            return new WorkspaceImages(templateDir, "the daemon is not root, so it cannot loop-mount workspaces", null);
        }
        if (!Files.exists(LOOP_CONTROL)) {
            return new WorkspaceImages(templateDir, LOOP_CONTROL + " is missing: the kernel has no loop devices", null);
        }
        for (String tool : TOOLS) {
            if (TOOL_DIRS.stream().noneMatch(dir -> Files.isExecutable(dir.resolve(tool)))) {
                return new WorkspaceImages(templateDir, tool + " is missing: apt-get install e2fsprogs util-linux", null);
            }
        }
        WorkspacePool pool = null;
        if (poolSize > 0) {
            try {
                pool = WorkspacePool.open(templateDir, poolSize, WorkspaceImages::copy);
            } catch (IOException e) {
                LOG.log(Level.WARNING, "no workspace image pool in " + templateDir + ": " + e.getMessage());
            }
        }
        return new WorkspaceImages(templateDir, null, pool);
    }

    private static void copy(Path template, Path target) throws IOException {
        HostTools.AS_DAEMON.run("cp", "--sparse=always", "--", template.toString(), target.toString());
    }

    boolean supported() {
        return unsupportedReason == null;
    }

    /** For operators: how workspace sizes are enforced, or why they are not. */
    String describe() {
        if (!supported()) {
            return "no size limit (" + unsupportedReason() + ")";
        }
        String pooled = pool == null ? "no pool of ready images"
                : pool.offReason() == null ? "a pool of ready images of the default size in " + pool.dir()
                : "pool of ready images off (" + pool.offReason() + ")";
        return "a loop-mounted ext4 image per sandbox; " + pooled;
    }

    String unsupportedReason() {
        return unsupportedReason;
    }

    /**
     * The image of the sandbox whose private directory is {@code dir}, from a template made now if
     * needed; with {@code pooled}, moved into place from the pool when it has a copy ready.
     */
    WorkspaceImage forSandbox(Path dir, int sizeMib, int uid, int gid, boolean pooled) throws IOException {
        Path template = template(sizeMib, uid, gid);
        Path file = dir.resolve(IMAGE);
        if (pooled && pool != null && pool.take(template, file).isPresent()) {
            return new WorkspaceImage(null, file);
        }
        return new WorkspaceImage(template, file);
    }

    /** Stops the pool and deletes its copies; sandboxes keep the images they have. */
    @Override
    public void close() {
        if (pool != null) {
            pool.close();
        }
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
