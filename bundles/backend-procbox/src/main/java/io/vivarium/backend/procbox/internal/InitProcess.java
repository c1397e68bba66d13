package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A sandbox's PID-1 on the host, named by pid and start time so that a reused pid is never
 * mistaken for it. Killing it makes the kernel kill everything else in its PID namespace.
 * Equal by pid and start time; it also remembers when it was last found running ({@link #runs}).
 */
final class InitProcess {
    /** How long a full look ({@link #isRunning}) stands for {@link #runs} while the pid exists. */
    private static final Duration RECHECK_AFTER = Duration.ofSeconds(1);

    private final long pid;
    private final String startTime;
    /** Whether the last full look found it running, and when ({@link System#nanoTime()}). */
    private volatile boolean foundRunning;
    private volatile long foundAt;

    InitProcess(long pid, String startTime) {
        this.pid = pid;
        this.startTime = Objects.requireNonNull(startTime, "startTime");
    }

    static Optional<InitProcess> find(long pid) {
        return ProcFs.liveStartTime(pid).map(startTime -> new InitProcess(pid, startTime));
    }

    long pid() {
        return pid;
    }

    /** {@code inside}, an absolute path as this process sees it, as the host reaches it: through {@code /proc/PID/root}. */
    Path throughRoot(Path inside) {
        return Path.of("/proc", Long.toString(pid), "root").resolve(Path.of("/").relativize(inside));
    }

    String startTime() {
        return startTime;
    }

    /** Whether this very process runs: its start time read from {@code /proc/PID/stat} (a zombie does not). */
    boolean isRunning() {
        return ProcFs.liveStartTime(pid).map(startTime::equals).orElse(false);
    }

    /**
     * {@link #isRunning} at most every {@link #RECHECK_AFTER}; in between, while it was last found
     * running, whether its pid still has an executable ({@link #stillLive}). Every call through the
     * guest channel asks (the instance's status, the channel before its call), and reading the stat
     * file (8 µs here, against 2 µs for the link) was a third of the daemon's CPU for a request
     * passed on to a sandbox's exposed port (async-profiler). A process that is gone or a zombie is
     * seen at once; a pid is not taken by another process within a second of its owner's end. What
     * must never reach another process (a new connection through {@code /proc/PID/root}) asks
     * {@link #isRunning}.
     */
    boolean runs() {
        long now = System.nanoTime();
        if (foundRunning && now - foundAt < RECHECK_AFTER.toNanos()) {
            return stillLive();
        }
        boolean running = isRunning();
        foundAt = now;
        foundRunning = running;
        return running;
    }

    /**
     * {@link #isRunning}, and not on its way out: a sandbox's init killed with SIGKILL keeps its pid
     * and start time, without its executable, while the kernel ends everything else in its PID
     * namespace, which on a loaded host takes long enough to be seen.
     */
    boolean isRunningOn() {
        return isRunning() && stillLive();
    }

    /**
     * Whether a live process has this pid: {@code /proc/PID/exe} resolves (a process that is gone has
     * no such link, a zombie's or an exiting one's no longer resolves). A daemon not allowed to read
     * the link looks in full.
     */
    private boolean stillLive() {
        try {
            Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "exe"));
            return true;
        } catch (AccessDeniedException e) {
            return isRunning();
        } catch (IOException e) {
            return false;
        }
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
        foundRunning = false;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof InitProcess other && other.pid == pid && other.startTime.equals(startTime);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(pid) * 31 + startTime.hashCode();
    }

    @Override
    public String toString() {
        return "InitProcess[pid=" + pid + ", startTime=" + startTime + "]";
    }
}
