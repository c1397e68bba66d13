package io.vivarium.backend.procbox.internal;

import io.vivarium.common.mounts.MountTable;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.vivarium.common.process.ProcessStarts;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/** Reads what this backend needs from {@code /proc}. */
final class ProcFs {

    private static final Path PROC = Path.of("/proc");

    private ProcFs() {
    }

    /** See {@link ProcessStarts#liveStartTime(long)}. */
    static Optional<String> liveStartTime(long pid) {
        return ProcessStarts.liveStartTime(pid);
    }

    /**
     * The children of a single-threaded process, from {@code /proc/PID/task/PID/children}: one
     * small read instead of the scan of every process that {@link ProcessHandle#children} makes.
     * Empty where the kernel lacks that file (or the process is gone), so the caller can fall back.
     */
    static Optional<List<Long>> children(long pid) {
        String id = Long.toString(pid);
        String list;
        try {
            list = Files.readString(PROC.resolve(id).resolve("task").resolve(id).resolve("children"));
        } catch (IOException e) {
            return Optional.empty();
        }
        return Optional.of(childPids(list));
    }

    static List<Long> childPids(String list) {
        String trimmed = list.strip();
        return trimmed.isEmpty() ? List.of() : Arrays.stream(trimmed.split("\\s+")).map(Long::valueOf).toList();
    }

    /** The command name of a process ({@code /proc/PID/comm}), if it exists. */
    static Optional<String> command(long pid) {
        try {
            return Optional.of(Files.readString(PROC.resolve(Long.toString(pid)).resolve("comm")).strip());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The argv of a process ({@code /proc/PID/cmdline}); empty if it is gone. */
    static List<String> commandLine(long pid) {
        try {
            String raw = new String(Files.readAllBytes(PROC.resolve(Long.toString(pid)).resolve("cmdline")), UTF_8);
            return raw.isEmpty() ? List.of() : List.of(raw.split("\0"));
        } catch (IOException e) {
            return List.of();
        }
    }

    /** Whether something is mounted at {@code dir} in this process's mount namespace. */
    static boolean isMountPoint(Path dir) {
        return MountTable.isMountPoint(dir);
    }

    static int effectiveUid() {
        return OwnIds.UID;
    }

    static int effectiveGid() {
        return OwnIds.GID;
    }

    /** The daemon's own ids never change: read once, on first use. */
    private static final class OwnIds {
        static final int UID = effectiveId(ownStatus(), "Uid:");
        static final int GID = effectiveId(ownStatus(), "Gid:");
    }

    /** Whether this process runs with no_new_privs, which every process it starts inherits. */
    static boolean noNewPrivileges() {
        return noNewPrivileges(ownStatus());
    }

    static boolean noNewPrivileges(String status) {
        return status.lines().anyMatch(line -> line.startsWith("NoNewPrivs:") && line.substring(11).trim().equals("1"));
    }

    private static String ownStatus() {
        try {
            return Files.readString(PROC.resolve("self/status"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The effective id from a {@code Uid:} or {@code Gid:} line (real, effective, saved, filesystem). */
    static int effectiveId(String status, String key) {
        return status.lines()
                .filter(line -> line.startsWith(key))
                .map(line -> Integer.parseInt(line.substring(key.length()).trim().split("\\s+")[1]))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + key + " line in /proc/self/status"));
    }
}
