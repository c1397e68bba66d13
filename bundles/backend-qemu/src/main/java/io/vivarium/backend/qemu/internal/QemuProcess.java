package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * A daemonized QEMU, named by pid and start time (field 22 of {@code /proc/PID/stat}) so that a
 * reused pid is never mistaken for it.
 */
record QemuProcess(long pid, String startTime) {

    private static final long POLL_MILLIS = 10;

    static Optional<QemuProcess> find(long pid) {
        return liveStartTime(pid).map(startTime -> new QemuProcess(pid, startTime));
    }

    boolean isRunning() {
        return liveStartTime(pid).map(startTime::equals).orElse(false);
    }

    /** Waits up to {@code wait} for it to exit; true if it did. */
    boolean awaitExit(Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (isRunning()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return !isRunning();
            }
        }
        return true;
    }

    /** SIGKILL if this is still the same process, then waits up to {@code wait} for it to go. */
    void kill(Duration wait) {
        if (isRunning()) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            awaitExit(wait);
        }
    }

    /** Resident memory in bytes ({@code VmRSS}), or empty once it is gone. */
    Optional<Long> residentBytes() {
        try {
            return Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
                    .filter(line -> line.startsWith("VmRSS:"))
                    .map(line -> Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024).findFirst();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The start time of a live process, or empty when it is gone or a zombie. */
    static Optional<String> liveStartTime(long pid) {
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return Optional.empty();
        }
        // the command name (field 2) is in parentheses and may itself contain spaces and ')'
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        return fields[0].equals("Z") || fields[0].equals("X") ? Optional.empty() : Optional.of(fields[22 - 3]);
    }
}
