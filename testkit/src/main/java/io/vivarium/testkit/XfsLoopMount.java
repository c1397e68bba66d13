package io.vivarium.testkit;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

/**
 * A loop-mounted XFS with reflink ({@code mkfs.xfs -m reflink=1} on a sparse file), for tests
 * that must really exercise copy-on-write clones: the root filesystem of these machines (ext4) has
 * none. {@link #create} checks that a clone works ({@code cp --reflink=always}) before handing the
 * mount out, and skips the test with the reason (JUnit assumption) when this host cannot do it: not
 * root, no {@code mkfs.xfs} (apt-get install xfsprogs), no loop devices, or a mount that is
 * refused. Whatever it made is removed again if a step fails, and by {@link #close()}: unmount,
 * then the image file and the mount point.
 */
public final class XfsLoopMount implements AutoCloseable {

    /** XFS refuses filesystems below 300 MiB; the image is sparse, so only what is written takes space. */
    public static final long DEFAULT_BYTES = 1L << 30;

    private static final Duration TOOL = Duration.ofSeconds(60);
    private static final Duration UNMOUNT_PATIENCE = Duration.ofSeconds(5);
    private static final List<Path> MKFS = List.of(Path.of("/usr/sbin/mkfs.xfs"), Path.of("/sbin/mkfs.xfs"));

    private final Path image;
    private final Path dir;
    private boolean mounted;

    private XfsLoopMount(Path image, Path dir) {
        this.image = image;
        this.dir = dir;
    }

    /** An XFS of {@link #DEFAULT_BYTES} mounted below {@code workDir} (which must not be on a tmpfs that forbids loop files). */
    public static XfsLoopMount create(Path workDir) throws IOException {
        return create(workDir, DEFAULT_BYTES);
    }

    public static XfsLoopMount create(Path workDir, long bytes) throws IOException {
        Assumptions.assumeTrue(isRoot(), "a loop mount needs root");
        Path mkfs = MKFS.stream().filter(Files::isExecutable).findFirst().orElse(null);
        Assumptions.assumeTrue(mkfs != null, "mkfs.xfs is not installed (apt-get install xfsprogs)");
        Assumptions.assumeTrue(Files.exists(Path.of("/dev/loop-control")), "this host has no loop devices (/dev/loop-control)");
        Files.createDirectories(workDir);
        XfsLoopMount mount = new XfsLoopMount(workDir.resolve("xfs.img"), workDir.resolve("xfs"));
        try {
            try (RandomAccessFile file = new RandomAccessFile(mount.image.toFile(), "rw")) {
                file.setLength(bytes);
            }
            run(List.of(mkfs.toString(), "-q", "-m", "reflink=1", mount.image.toString()));
            Files.createDirectories(mount.dir);
            String refused = tryRun(List.of("mount", "-o", "loop", mount.image.toString(), mount.dir.toString()));
            Assumptions.assumeTrue(refused == null, () -> "the loop mount of an XFS image was refused: " + refused);
            mount.mounted = true;
            Path a = Files.writeString(mount.dir.resolve(".reflink-probe"), "probe");
            String noClone = tryRun(List.of("cp", "--reflink=always", a.toString(), a + ".clone"));
            Assumptions.assumeTrue(noClone == null, () -> "the XFS mount cannot clone (cp --reflink=always): " + noClone);
            Files.delete(a);
            Files.delete(Path.of(a + ".clone"));
            return mount;
        } catch (IOException | RuntimeException | Error e) {
            try {
                mount.close();
            } catch (IOException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /** The mounted filesystem's root. */
    public Path dir() {
        return dir;
    }

    /**
     * Unmounts (waiting a little while something still holds a file there, then detaching it
     * lazily and saying so) and removes the image and the mount point.
     */
    @Override
    public void close() throws IOException {
        IOException busy = null;
        if (mounted) {
            Instant deadline = Instant.now().plus(UNMOUNT_PATIENCE);
            String failed = tryRun(List.of("umount", dir.toString()));
            while (failed != null && Instant.now().isBefore(deadline)) {
                pause();
                failed = tryRun(List.of("umount", dir.toString()));
            }
            if (failed != null) {
                tryRun(List.of("umount", "-l", dir.toString()));
                busy = new IOException("the XFS at " + dir + " was still in use (" + failed + "); detached it lazily");
            }
            mounted = false;
        }
        Files.deleteIfExists(image);
        if (Files.isDirectory(dir)) {
            Files.deleteIfExists(dir);
        }
        if (busy != null) {
            throw busy;
        }
    }

    private static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("Uid:")).anyMatch(l -> l.split("\\s+")[1].equals("0"));
        } catch (IOException e) {
            return false;
        }
    }

    private static void run(List<String> argv) throws IOException {
        String failed = tryRun(argv);
        if (failed != null) {
            throw new IOException(failed);
        }
    }

    /** Null when {@code argv} succeeded, else what it printed and how it ended. */
    private static String tryRun(List<String> argv) throws IOException {
        Process p = new ProcessBuilder(new ArrayList<>(argv)).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(TOOL.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return String.join(" ", argv) + " did not finish in " + TOOL.toSeconds() + " s";
            }
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.exitValue() == 0 ? null : String.join(" ", argv) + " failed (" + p.exitValue() + "): " + output;
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + argv.get(0), e);
        }
    }

    /** A short wait between unmount attempts (a process that held a file is being reaped). */
    private static void pause() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
