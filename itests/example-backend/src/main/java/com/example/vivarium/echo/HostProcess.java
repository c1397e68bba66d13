package com.example.vivarium.echo;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A host process named by its pid and its start time (field 22 of {@code /proc/PID/stat}, clock
 * ticks since boot): together they name one process even after its pid has gone to another, which
 * is what adoption and destroy go by. A zombie counts as gone.
 */
record HostProcess(long pid, String startTime) {

    private static final long POLL_MILLIS = 5;

    /** The live process with this pid, with its start time; empty if there is none. */
    static Optional<HostProcess> find(long pid) {
        return startTime(pid).map(start -> new HostProcess(pid, start));
    }

    /** Whether this very process still runs: its pid is live and started when it did. */
    boolean isRunning() {
        return startTime(pid).map(startTime::equals).orElse(false);
    }

    /** The start time of the live process {@code pid}; empty for no such process, or a zombie. */
    static Optional<String> startTime(long pid) {
        try {
            return fromStat(Files.readString(Path.of("/proc", Long.toString(pid), "stat"), UTF_8));
        } catch (IOException e) {
            return Optional.empty(); // no such process, or it went between open and read
        }
    }

    /** The start time in a {@code /proc/PID/stat} line; empty for a zombie or a dead process. */
    static Optional<String> fromStat(String stat) {
        // the command name (field 2) is in parentheses and may itself hold spaces and ')'
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).strip().split(" ");
        if (fields[0].equals("Z") || fields[0].equals("X")) {
            return Optional.empty();
        }
        return Optional.of(fields[22 - 3]);
    }

    /** Its argv ({@code /proc/PID/cmdline}); empty once it is gone. */
    List<String> commandLine() {
        try {
            String raw = new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), UTF_8);
            return isRunning() && !raw.isEmpty() ? List.of(raw.split("\0")) : List.of();
        } catch (IOException e) {
            return List.of();
        }
    }

    /**
     * Kills every process below this one, then this one, with SIGKILL, and waits up to {@code wait}
     * until all are gone; returns whether they are. Those below go first, while this one (the agent,
     * a child subreaper) still collects their orphans, so none slips away to init meanwhile.
     */
    boolean killTree(Duration wait) {
        List<HostProcess> killed = new ArrayList<>();
        for (int round = 0; round < 5 && isRunning(); round++) {
            List<ProcessHandle> below = ProcessHandle.of(pid).map(h -> h.descendants().toList()).orElse(List.of());
            List<HostProcess> live = below.stream().flatMap(h -> find(h.pid()).stream()).toList();
            if (live.isEmpty()) {
                break;
            }
            live.forEach(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly));
            killed.addAll(live);
        }
        if (isRunning()) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        killed.add(this);
        long deadline = System.nanoTime() + wait.toNanos();
        while (killed.stream().anyMatch(HostProcess::isRunning)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }
}
