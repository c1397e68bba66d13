package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Names of directories that belong to one daemon process ({@code pool-PID-STARTTIME-RANDOM}), so
 * that the next daemon can tell those of a daemon killed with -9 from those of one that runs.
 */
final class DaemonOwnedDirs {

    private static final String PREFIX = "pool-";

    private DaemonOwnedDirs() {
    }

    /** A new name owned by this process. */
    static String newName() throws IOException {
        long pid = ProcessHandle.current().pid();
        String startTime = ProcFs.liveStartTime(pid)
                .orElseThrow(() -> new IOException("cannot read this process's start time"));
        return PREFIX + pid + "-" + startTime + "-" + UUID.randomUUID();
    }

    /** Whether the process named in {@code name} still runs. */
    static boolean ownerRuns(String name) {
        if (!name.startsWith(PREFIX)) {
            return false;
        }
        String[] parts = name.substring(PREFIX.length()).split("-", 3);
        if (parts.length < 3 || !parts[0].matches("[0-9]{1,10}")) {
            return false;
        }
        return ProcFs.liveStartTime(Long.parseLong(parts[0])).filter(parts[1]::equals).isPresent();
    }

    /** The directories under {@code parent} named by {@link #newName} whose processes no longer run. */
    static List<Path> abandoned(Path parent) throws IOException {
        List<Path> abandoned = new ArrayList<>();
        if (!Files.isDirectory(parent)) {
            return abandoned;
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(parent, PREFIX + "*")) {
            for (Path dir : dirs) {
                if (!ownerRuns(dir.getFileName().toString())) {
                    abandoned.add(dir);
                }
            }
        }
        return abandoned;
    }
}
