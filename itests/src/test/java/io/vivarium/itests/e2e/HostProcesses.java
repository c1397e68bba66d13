package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Processes on the host as /proc shows them (command lines with their arguments, unlike {@code ps -o comm}). */
final class HostProcesses {
    private HostProcesses() {
    }

    /** {@code /proc/PID/cmdline} with spaces between the arguments; empty once the process is gone. */
    static String cmdline(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8)
                    .replace('\0', ' ').strip();
        } catch (IOException gone) {
            return "";
        }
    }

    /** {@code /proc/PID/comm}, the process's name; empty once the process is gone. */
    static String comm(long pid) {
        return read(pid, "comm").strip();
    }

    /** VmRSS of a process in KiB, from {@code /proc/PID/status}; 0 once it is gone. */
    static long rssKib(long pid) {
        return read(pid, "status").lines().filter(line -> line.startsWith("VmRSS:"))
                .mapToLong(line -> Long.parseLong(line.replaceAll("[^0-9]", ""))).findFirst().orElse(0);
    }

    /**
     * The fields of {@code /proc/PID/smaps_rollup} in KiB ({@code Rss}, {@code Pss}, {@code Private_Dirty}...):
     * PSS counts a page shared by k processes as 1/k to each; empty once the process is gone.
     */
    static Map<String, Long> memoryKib(long pid) {
        Map<String, Long> kib = new HashMap<>();
        for (String line : read(pid, "smaps_rollup").lines().toList()) {
            String[] f = line.split("\\s+");
            if (f.length == 3 && f[0].endsWith(":") && f[2].equals("kB")) {
                kib.put(f[0].substring(0, f[0].length() - 1), Long.parseLong(f[1]));
            }
        }
        return kib;
    }

    private static String read(long pid, String file) {
        try {
            return Files.readString(Path.of("/proc", Long.toString(pid), file), StandardCharsets.ISO_8859_1);
        } catch (IOException gone) {
            return "";
        }
    }

    /** The descendants of {@code ancestor} whose command line is exactly {@code command}. */
    static List<Long> descendants(long ancestor, String command) {
        return ProcessHandle.of(ancestor).stream().flatMap(ProcessHandle::descendants).map(ProcessHandle::pid)
                .filter(pid -> command.equals(cmdline(pid))).toList();
    }

    /**
     * The one descendant of {@code ancestor} running {@code command}, e.g. a sandbox's background
     * process, waiting a moment for it: an exec of {@code sh -c 'cmd &'} returns once the shell
     * has exited, possibly before its forked child has exec'd {@code cmd}.
     */
    static long theDescendant(long ancestor, String command) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        List<Long> found = descendants(ancestor, command);
        while (found.size() != 1 && System.nanoTime() < deadline) {
            Thread.sleep(10);
            found = descendants(ancestor, command);
        }
        if (found.size() != 1) {
            throw new AssertionError("expected one '" + command + "' under process " + ancestor + ", found " + found);
        }
        return found.get(0);
    }

    /**
     * The directories of the cgroups {@code pid} is in below the root of a hierarchy (cgroup v1's
     * controllers, v2's unified one at {@code /sys/fs/cgroup} or beside v1 at {@code unified}), as
     * {@code /proc/PID/cgroup} names them; empty once the process is gone.
     */
    static List<Path> cgroups(long pid) {
        List<String> lines;
        try {
            lines = Files.readAllLines(Path.of("/proc", Long.toString(pid), "cgroup"));
        } catch (IOException gone) {
            return List.of();
        }
        List<Path> dirs = new ArrayList<>();
        for (String line : lines) {
            String[] f = line.split(":", 3);
            if (f.length < 3 || f[2].equals("/")) {
                continue;
            }
            String relative = f[2].substring(1);
            List<String> mounts = f[1].isEmpty() ? List.of("", "unified") : List.of(f[1].replaceFirst("^name=", ""));
            for (String mount : mounts) {
                Path dir = Path.of("/sys/fs/cgroup", mount).resolve(relative);
                if (Files.isDirectory(dir)) {
                    dirs.add(dir);
                }
            }
        }
        return dirs;
    }

    /** Still the same process: it exists and runs {@code command}. */
    static boolean runs(long pid, String command) {
        return command.equals(cmdline(pid));
    }
}
