package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;
import java.util.stream.Stream;

import io.vivarium.api.ResourceUsage;

/**
 * What a sandbox uses, from {@code /proc} and its workspace: the resident memory and CPU time of
 * every process in its PID namespace (its init's, and those exec entered it with), and the bytes
 * of the regular files in its workspace.
 */
final class SandboxUsage {

    /** {@code USER_HZ}: the unit of the CPU times in {@code /proc/PID/stat}; 100 on every Linux ABI. */
    private static final double TICKS_PER_SECOND = 100;
    private static final Path PROC = Path.of("/proc");

    private SandboxUsage() {
    }

    /**
     * @param initPid host pid of a process in the sandbox's PID namespace
     * @param workspace the workspace on the host, through a view that follows no symlink; null if it is gone
     */
    static ResourceUsage measure(long initPid, Path workspace) {
        Optional<Path> namespace = pidNamespace(Long.toString(initPid));
        long rssBytes = 0;
        long ticks = 0;
        if (namespace.isPresent()) {
            try (Stream<Path> all = Files.list(PROC)) {
                for (Path p : (Iterable<Path>) all::iterator) {
                    String pid = p.getFileName().toString();
                    if (pid.chars().allMatch(Character::isDigit) && pidNamespace(pid).equals(namespace)) {
                        rssBytes += read(p.resolve("status")).map(SandboxUsage::residentBytes).orElse(0L);
                        ticks += read(p.resolve("stat")).map(SandboxUsage::cpuTicks).orElse(0L);
                    }
                }
            } catch (IOException e) {
                // /proc is always listable; a process vanishing mid-walk only drops its share
            }
        }
        return new ResourceUsage(namespace.isPresent() ? rssBytes : null,
                namespace.isPresent() ? ticks / TICKS_PER_SECOND : null, workspaceBytes(workspace));
    }

    /** {@code VmRSS} of a {@code /proc/PID/status}, in bytes (0 for a kernel thread or zombie). */
    static long residentBytes(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]) * 1024;
            }
        }
        return 0;
    }

    /** utime + stime + cutime + cstime of a {@code /proc/PID/stat}, in clock ticks. */
    static long cpuTicks(String stat) {
        // fields after the parenthesised command name, which may contain spaces; [0] is field 3
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
    }

    private static Optional<Path> pidNamespace(String pid) {
        try {
            return Optional.of(Files.readSymbolicLink(PROC.resolve(pid).resolve("ns").resolve("pid")));
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return Optional.empty();
        }
    }

    private static Optional<String> read(Path file) {
        try {
            return Optional.of(Files.readString(file));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** Sizes of the regular files below {@code dir}, never following a symlink; null if it is null or cannot be walked. */
    private static Long workspaceBytes(Path dir) {
        if (dir == null) {
            return null;
        }
        long[] total = { 0 };
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                    if (attrs.isRegularFile()) {
                        total[0] += attrs.size();
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    return FileVisitResult.CONTINUE; // removed or unreadable meanwhile
                }
            });
            return total[0];
        } catch (IOException e) {
            return null;
        }
    }
}
