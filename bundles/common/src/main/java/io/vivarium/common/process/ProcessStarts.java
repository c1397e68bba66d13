package io.vivarium.common.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Start times of processes (field 22 of {@code /proc/PID/stat}, clock ticks since boot): with the
 * pid, they name a process unambiguously even after its pid was reused. What the backends record
 * of the process that keeps a sandbox (a bwrap init, a QEMU).
 */
public final class ProcessStarts {

    private ProcessStarts() {
    }

    /** The start time of a live process, or empty when there is no such process or it is a zombie. */
    public static Optional<String> liveStartTime(long pid) {
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            // no such process, or it vanished between open and read
            return Optional.empty();
        }
        return fromStat(stat);
    }

    /** The start time in a {@code /proc/PID/stat} line, or empty for a zombie or a dead process. */
    public static Optional<String> fromStat(String stat) {
        // the command name (field 2) is in parentheses and may itself contain spaces and ')'
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        String state = fields[0];
        if (state.equals("Z") || state.equals("X")) {
            return Optional.empty();
        }
        return Optional.of(fields[22 - 3]);
    }
}
