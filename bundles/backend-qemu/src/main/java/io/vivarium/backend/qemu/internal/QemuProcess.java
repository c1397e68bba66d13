package io.vivarium.backend.qemu.internal;

import io.vivarium.common.process.ProcessStarts;

import java.io.IOException;
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
        return ProcessStarts.liveStartTime(pid).map(startTime -> new QemuProcess(pid, startTime));
    }

    boolean isRunning() {
        return ProcessStarts.liveStartTime(pid).map(startTime::equals).orElse(false);
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

}
