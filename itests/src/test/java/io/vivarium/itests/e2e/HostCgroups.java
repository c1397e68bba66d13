package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The cgroup a host process is in, found as the kernel reports it ({@code /proc/PID/cgroup} and
 * the cgroup mounts in {@code /proc/self/mountinfo}), on cgroup v2 (the unified hierarchy, as on
 * stock Debian 12) as on v1 and hybrid hosts, wherever the hierarchies are mounted.
 */
final class HostCgroups {
    private HostCgroups() {
    }

    /**
     * The directory of the cgroup that holds {@code pid}'s tasks to a pids limit (the one with a
     * {@code pids.max}): an AssertionError if there is none, since then no limit is enforced.
     */
    static Path pidsCgroup(long pid) throws IOException {
        List<String> membership = Files.readAllLines(Path.of("/proc", Long.toString(pid), "cgroup"));
        List<String> mounts = Files.readAllLines(Path.of("/proc/self/mountinfo"));
        for (String line : membership) {
            String[] f = line.split(":", 3); // hierarchy id : controllers (empty on v2) : path
            boolean v2 = f[0].equals("0") && f[1].isEmpty();
            if (!v2 && !Arrays.asList(f[1].split(",")).contains("pids")) {
                continue;
            }
            for (String mount : mounts) {
                String[] m = mount.split(" ");
                int dash = Arrays.asList(m).indexOf("-");
                String type = m[dash + 1];
                boolean same = v2 ? type.equals("cgroup2")
                        : type.equals("cgroup") && Arrays.asList(m[dash + 3].split(",")).contains("pids");
                Path dir = same ? below(Path.of(m[4]), m[3], f[2]) : null;
                if (dir != null && Files.isRegularFile(dir.resolve("pids.max"))) {
                    return dir;
                }
            }
        }
        throw new AssertionError("process " + pid + " is in no cgroup with a pids limit (no pids.max in any of its"
                + " cgroups): /proc/" + pid + "/cgroup says " + membership);
    }

    /** A cgroup file's content, stripped (e.g. {@code pids.current}). */
    static String read(Path cgroup, String file) throws IOException {
        return Files.readString(cgroup.resolve(file)).strip();
    }

    /** How many forks the cgroup's pids limit refused: the {@code max} line of {@code pids.events} (v1 and v2 alike). */
    static long forksRefused(Path cgroup) throws IOException {
        for (String line : Files.readAllLines(cgroup.resolve("pids.events"))) {
            String[] kv = line.strip().split("\\s+");
            if (kv[0].equals("max")) {
                return Long.parseLong(kv[1]);
            }
        }
        throw new AssertionError("no max line in " + cgroup.resolve("pids.events"));
    }

    /** Where the cgroup {@code path} is, through a mount of its hierarchy whose root is {@code mountRoot}; null if outside it. */
    private static Path below(Path mountPoint, String mountRoot, String path) {
        if (mountRoot.equals("/")) {
            return mountPoint.resolve(path.substring(1));
        }
        if (path.equals(mountRoot) || path.startsWith(mountRoot + "/")) {
            return mountPoint.resolve(path.substring(mountRoot.length()).replaceFirst("^/", ""));
        }
        return null;
    }
}
