package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;

/**
 * The files of one VM, in the sandbox's private directory {@code dir} but two. A Unix socket path has
 * at most 107 bytes, which a state directory deep in a tree exceeds, so QEMU binds and the daemon
 * reaches the sockets through {@code link}: a short symlink to {@code dir} in a directory of the
 * daemon's own ({@link QemuSettings#linkDir()}). The two are {@code vmstate}, the qcow2 that holds the
 * RAM state of the VM's checkpoints ({@link VmCheckpoints}), and {@code memoryRam}, the guest's RAM
 * file where it is not in {@code dir} ({@link #ramInMemory()}), both in a directory of the daemon's own
 * in memory ({@link QemuSettings#scratchDir()}); each is null for a VM started without it.
 */
record VmFiles(Path dir, Path link, Path vmstate, Path memoryRam) {

    private static final int MAX_SOCKET_PATH = 107;

    /** A VM started before checkpoints had their own RAM-state file. */
    VmFiles(Path dir, Path link) {
        this(dir, link, null, null);
    }

    /**
     * @param ramInMemory whether the guest's RAM file goes into {@code scratchDir} too ({@link #ramInMemory()})
     */
    static VmFiles of(Path dir, Path linkDir, Path scratchDir, String id, boolean ramInMemory) {
        return new VmFiles(dir, linkDir.resolve(id), scratchDir.resolve(id + ".vmstate.qcow2"),
                ramInMemory ? scratchDir.resolve(id + QemuLauncher.RAM_IN_MEMORY_SUFFIX) : null);
    }

    /** These files without the RAM-state file (a VM for which it could not be made). */
    VmFiles withoutVmstate() {
        return new VmFiles(dir, link, null, memoryRam);
    }

    Path disk() {
        return dir.resolve("disk.qcow2");
    }

    /**
     * The guest's RAM of a booted VM ({@code memory-backend-file}, {@code share=on}); a forked child
     * maps its snapshot's. In memory (see {@link #ramInMemory()}), else in {@code dir}.
     */
    Path ram() {
        return memoryRam != null ? memoryRam : dir.resolve("memory.ram");
    }

    /**
     * Whether the RAM file is on tmpfs rather than the state directory's file system. On a disk
     * file system the kernel writes the guest's dirty RAM back to disk and write-protects it again,
     * so every page QEMU writes next (a {@code loadvm} writes the whole RAM state and, at its system
     * reset, the ROM blobs: an image without the PVH loader has its whole kernel among them) first takes a page fault into the file system
     * ({@code ext4_page_mkwrite}): a restore after a write-back took twice as long (docs/benchmarks.md).
     * Where the state directory clones files (reflink), the RAM file stays there, for a capture
     * clones it while the VM is stopped (QemuLauncher decides, {@code ramInMemory} of {@link #of}).
     */
    boolean ramInMemory() {
        return memoryRam != null;
    }

    /** The device state a capture writes before it is stored. */
    Path deviceState() {
        return dir.resolve("devices.state");
    }

    /** A forked child's RAM as a flat file, or a booted VM's RAM as it was when stopped, while a capture stores it. */
    Path branchRam() {
        return dir.resolve("memory.branch");
    }

    /** The disk as it was when the VM stopped for a capture, while the capture stores it. */
    Path frozenDisk() {
        return dir.resolve("disk.frozen");
    }

    Path console() {
        return dir.resolve("console.log");
    }

    /** QEMU's own stderr once it has daemonized ({@code -D}): why a QEMU that failed did. */
    Path qemuLog() {
        return dir.resolve("qemu.log");
    }

    Path pidFile() {
        return dir.resolve("qemu.pid");
    }

    /** Why the VM failed, written by the daemon when it saw it happen, for the next one to report. */
    Path failure() {
        return dir.resolve("failure");
    }

    /**
     * Says the VM is powered off with no QEMU on purpose: written before a boot in a new QEMU lets
     * the old one go, naming it, so a boot that fails (or a daemon that stops) afterwards leaves a
     * VM whose record names that QEMU stopped rather than failed; removed when an adoption finds a
     * QEMU running.
     */
    Path poweredOff() {
        return dir.resolve("powered-off");
    }

    Path qmpSocket() {
        return link.resolve("qmp.sock");
    }

    Path agentSocket() {
        return link.resolve("agent.sock");
    }

    /** Creates {@code dir}, the link to it and the directory of the files in memory. */
    void prepare() throws IOException {
        Files.createDirectories(dir);
        ownDirectory(link.getParent());
        for (Path inMemory : new Path[] {vmstate, memoryRam}) {
            if (inMemory != null) {
                ownDirectory(inMemory.getParent());
            }
        }
        if (qmpSocket().toString().getBytes(StandardCharsets.UTF_8).length > MAX_SOCKET_PATH) {
            throw new IOException("the socket path " + qmpSocket() + " is longer than " + MAX_SOCKET_PATH
                    + " bytes: configure a shorter link directory");
        }
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, dir.toAbsolutePath());
    }

    /** A shared directory (such as the temporary one) with a subdirectory only this daemon's user can use. */
    private static void ownDirectory(Path path) throws IOException {
        try {
            Files.createDirectory(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // made by an earlier VM; checked below
        }
        // another user could have made it first, to redirect the links or read the RAM states
        Object owner = Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (!Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)
                || !owner.equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))) {
            throw new IOException(path + " is not a directory of this daemon's user");
        }
    }

    /** Removes every file of the VM and the link; the directory itself is core's. */
    void remove() throws IOException {
        for (Path file : List.of(qmpSocket(), agentSocket(), disk(), ram(), deviceState(), branchRam(), frozenDisk(),
                console(), qemuLog(), pidFile(), failure(), poweredOff())) {
            Files.deleteIfExists(dir.resolve(file.getFileName()));
        }
        if (vmstate != null) {
            Files.deleteIfExists(vmstate);
        }
        if (memoryRam != null) {
            Files.deleteIfExists(memoryRam);
        }
        Files.deleteIfExists(link);
    }

    /** The pid QEMU wrote, if it did. */
    Optional<Long> pid() {
        try {
            return Optional.of(Long.parseLong(Files.readString(pidFile()).strip()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** The last {@code bytes} of a log, stripped; "nothing" when empty or missing. */
    static String tail(Path log, int bytes) {
        try (var file = new java.io.RandomAccessFile(log.toFile(), "r")) {
            long start = Math.max(0, file.length() - bytes);
            byte[] tail = new byte[(int) (file.length() - start)];
            file.seek(start);
            file.readFully(tail);
            String text = new String(tail, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "nothing" : text;
        } catch (IOException e) {
            return "nothing (" + e.getMessage() + ")";
        }
    }
}
