package io.vivarium.kit.vmm;

import io.vivarium.common.process.ProcessStarts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A VMM process named by its pid and start time ({@code /proc/PID/stat}), so that a pid the
 * kernel gave to another process after it exited is never taken for it.
 */
public record VmmProcess(long pid, String startTime) {

    /** The process {@code pid} runs now, if any. */
    public static Optional<VmmProcess> find(long pid) {
        return ProcessStarts.liveStartTime(pid).map(start -> new VmmProcess(pid, start));
    }

    /** One read of {@code /proc/PID/stat}. */
    public boolean isRunning() {
        return ProcessStarts.liveStartTime(pid).filter(startTime::equals).isPresent();
    }

    /**
     * SIGKILL to it and to every process below it (a VMM has none of its own; a jailer, a helper or
     * a test's emulated guest would), then waits until all of them are gone; false if one is still
     * there after {@code timeout}.
     */
    public boolean kill(Duration timeout) {
        List<VmmProcess> all = new ArrayList<>();
        if (isRunning()) {
            ProcessHandle.of(pid).ifPresent(p -> p.descendants().forEach(d -> find(d.pid()).ifPresent(all::add)));
            all.add(this);
        }
        all.forEach(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly));
        long deadline = System.nanoTime() + timeout.toNanos();
        while (all.stream().anyMatch(VmmProcess::isRunning)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        return true;
    }
}
