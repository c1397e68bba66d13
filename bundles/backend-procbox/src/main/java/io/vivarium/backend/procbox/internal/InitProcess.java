package io.vivarium.backend.procbox.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * A sandbox's PID-1 on the host, named by pid and start time so that a reused pid is never
 * mistaken for it. Killing it makes the kernel kill everything else in its PID namespace.
 */
record InitProcess(long pid, String startTime) {

    static Optional<InitProcess> find(long pid) {
        return ProcFs.liveStartTime(pid).map(startTime -> new InitProcess(pid, startTime));
    }

    boolean isRunning() {
        return ProcFs.liveStartTime(pid).map(startTime::equals).orElse(false);
    }

    /**
     * Whether a process of this pid exists (a stat of {@code /proc/PID}, without reading its
     * {@code stat}, which costs the kernel far more): false means this one is gone; true alone does not
     * tell it from a later process that took its pid.
     */
    boolean pidExists() {
        return Files.exists(Path.of("/proc", Long.toString(pid)));
    }

    /** Sends SIGKILL if this is still the same process, then waits up to {@code wait} for it to go. */
    void kill(Duration wait) {
        if (!isRunning()) {
            return;
        }
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + wait.toNanos();
        while (isRunning() && System.nanoTime() < deadline && Sleep.briefly(5)) {
            // polling
        }
    }
}
