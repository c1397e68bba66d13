package io.vivarium.backend.procbox.internal;

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
