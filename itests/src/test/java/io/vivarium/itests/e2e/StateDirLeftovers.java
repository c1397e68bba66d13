package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.vivarium.testkit.Bounded;

/**
 * What a daemon's sandboxes leave on the host when nobody deletes them: processes whose arguments
 * name the state directory (the bubblewrap of each sandbox and the init of its PID namespace, whose
 * death takes the namespace with it) and mounts under it (workspace views, dry-run overlays).
 */
final class StateDirLeftovers {
    private StateDirLeftovers() {
    }

    /**
     * The processes whose command line names a path under {@code stateDir}, but for a running
     * daemon's procbox launcher ({@link #launchers}), which runs no sandbox and ends with its daemon.
     */
    static List<ProcessHandle> processes(Path stateDir) {
        return naming(stateDir).filter(p -> !isLauncher(p)).toList();
    }

    /** The procbox launchers ({@code vivarium-agent --launcher}) whose binary lies under {@code stateDir}. */
    static List<ProcessHandle> launchers(Path stateDir) {
        return naming(stateDir).filter(StateDirLeftovers::isLauncher).toList();
    }

    private static Stream<ProcessHandle> naming(Path stateDir) {
        String prefix = stateDir.toAbsolutePath() + "/";
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses().filter(p -> p.pid() != self)
                .filter(p -> HostProcesses.cmdline(p.pid()).contains(prefix));
    }

    private static boolean isLauncher(ProcessHandle p) {
        return HostProcesses.cmdline(p.pid()).endsWith(" --launcher");
    }

    /** Kills those processes and unmounts what is mounted under {@code stateDir}; returns what it found. */
    static List<String> remove(Path stateDir) throws IOException, InterruptedException {
        List<String> found = new ArrayList<>();
        List<ProcessHandle> processes = processes(stateDir);
        for (ProcessHandle p : processes) {
            found.add("process " + p.pid() + ": " + HostProcesses.cmdline(p.pid()));
            p.destroyForcibly();
        }
        for (ProcessHandle p : processes) {
            p.onExit().completeOnTimeout(p, 10, TimeUnit.SECONDS).join();
        }
        for (String mount : mounts(stateDir)) {
            found.add("mount " + mount);
            Bounded.run(Duration.ofSeconds(30), "umount", "-l", mount);
        }
        if (!found.isEmpty()) {
            System.err.println("removed what the sandboxes of " + stateDir + " left behind: " + found);
        }
        return found;
    }

    /** Mount points under {@code stateDir} (or any directory), deepest first. */
    static List<String> mounts(Path stateDir) throws IOException {
        String prefix = stateDir.toAbsolutePath() + "/";
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String mountPoint = unescape(line.split(" ")[4]);
            if (mountPoint.startsWith(prefix)) {
                out.add(mountPoint);
            }
        }
        out.sort(Comparator.comparingInt(String::length).reversed());
        return out;
    }

    /** mountinfo escapes space, tab, newline and backslash as octal. */
    private static String unescape(String field) {
        return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    }
}
