package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.RootImage;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;

/**
 * A template image's root as a VM boots it (docs/templates.md, "QEMU"): a read-only ext4 disk made
 * once per image with {@code mkfs.ext4 -d} (owners, modes, links and extended attributes as
 * unpacked), plus the mountpoints the guest's {@code /init} moves its own file systems onto, added
 * with {@code debugfs} where the image lacks them. It is kept in the image's
 * {@link RootImage#derivedDir()}, so it goes with the image; made in a staging file and renamed,
 * so a daemon killed while it is made leaves no disk that looks whole.
 */
final class RootDisks {

    static final String FILE = "qemu-root.ext4";
    /** What the guest moves into the root before it switches to it: each must be a directory there. */
    static final List<String> MOUNTPOINTS = List.of("dev", "proc", "sys", "run", "tmp", "work");
    private static final Duration MAKE_TIMEOUT = Duration.ofMinutes(10);
    private static final long BLOCK = 4096;
    /** Room past the files: ext4's own metadata (bitmaps, group descriptors, directories' growth). */
    private static final long SLACK_BYTES = 32L << 20;

    /**
     * The template image's root a VM of {@code image} runs on, its disk made first if it is the
     * image's first VM; null without a template. Its commands run as the image's user through our
     * agent, which a stock qemu-ga image cannot do; never as root, as on the other backends.
     */
    VmRoot rootOf(RootImage root, GuestImage image, OperationContext context) throws IOException {
        if (root == null) {
            return null;
        }
        if (!image.hasOurAgent()) {
            throw ApiException.badRequest("the guest image " + image.dir().getFileName() + " has the agent " + image.agent()
                    + ", which cannot run commands as a template image's user; set the qemu backend's default_image to "
                    + "one with vivarium-agent");
        }
        context.checkpoint("making the disk of the image's root");
        return new VmRoot(diskOf(root), root.uidOr(VmRoot.NOBODY), root.gidOr(VmRoot.NOBODY));
    }

    /** The disk of {@code root}, made first if this is its image's first VM; one is made at a time. */
    synchronized Path diskOf(RootImage root) throws IOException {
        Path disk = root.derivedDir().resolve(FILE);
        if (Files.isRegularFile(disk)) {
            return disk;
        }
        Path rootfs = root.rootfs();
        List<String> missing = missingMountpoints(rootfs);
        Files.createDirectories(root.derivedDir());
        Path staging = root.derivedDir().resolve(".staging-" + UUID.randomUUID() + "-" + FILE);
        try {
            long[] sizes = sizes(rootfs);
            long bytes = sizes[0] + sizes[0] / 10 + sizes[1] * 256 + SLACK_BYTES;
            try (RandomAccessFile file = new RandomAccessFile(staging.toFile(), "rw")) {
                file.setLength((bytes + (1 << 20) - 1) & -(1L << 20));
            }
            HostCommand.run(List.of("mkfs.ext4", "-q", "-F", "-b", Long.toString(BLOCK), "-m", "0",
                    "-O", "^has_journal", "-L", "vivarium-root", "-N", Long.toString(sizes[1] + 1024),
                    "-E", "root_owner=0:0", "-d", rootfs.toString(), staging.toString()), MAKE_TIMEOUT);
            if (!missing.isEmpty()) {
                addDirectories(staging, missing);
            }
            AtomicFiles.fsync(staging);
            Files.move(staging, disk, StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.fsyncDirectory(root.derivedDir());
            return disk;
        } finally {
            Files.deleteIfExists(staging);
        }
    }

    /** The mountpoints {@code rootfs} lacks; a 400 when one is there but not a directory (a link, a file). */
    static List<String> missingMountpoints(Path rootfs) {
        List<String> missing = new ArrayList<>();
        for (String name : MOUNTPOINTS) {
            Path p = rootfs.resolve(name);
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                throw ApiException.badRequest("the template's image has /" + name + " as something other than a "
                        + "directory (a link or a file), where a VM mounts its own; it cannot run on qemu: make /" + name
                        + " a directory in the image, or use a backend that shares the host's kernel");
            }
            missing.add(name);
        }
        return missing;
    }

    /** Bytes of the files in blocks, and how many entries there are: what the file system must hold. */
    private static long[] sizes(Path rootfs) throws IOException {
        AtomicLong bytes = new AtomicLong();
        AtomicLong entries = new AtomicLong();
        try (Stream<Path> all = Files.walk(rootfs)) {
            all.forEach(p -> {
                entries.incrementAndGet();
                try {
                    long size = Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) ? Files.size(p) : BLOCK;
                    bytes.addAndGet((size + BLOCK - 1) / BLOCK * BLOCK);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return new long[] {bytes.get(), entries.get()};
    }

    /** The mountpoints the image lacks, made in the new file system (mode 0755, root's). */
    private static void addDirectories(Path disk, List<String> names) throws IOException {
        Path commands = disk.resolveSibling(disk.getFileName() + ".debugfs");
        try {
            Files.writeString(commands, String.join("", names.stream().map(n -> "mkdir /" + n + "\n").toList()));
            String out = HostCommand.run(List.of("debugfs", "-w", "-f", commands.toString(), disk.toString()),
                    MAKE_TIMEOUT);
            // debugfs reports a failed command on its output and still exits 0
            for (String line : out.lines().toList()) {
                if (!line.startsWith("debugfs") && !line.isBlank()) {
                    throw new IOException("debugfs could not add the mountpoints " + names + " to " + disk + ": " + out.strip());
                }
            }
        } finally {
            Files.deleteIfExists(commands);
        }
    }
}
