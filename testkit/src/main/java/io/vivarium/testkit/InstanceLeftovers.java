package io.vivarium.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;

/**
 * What an instance could leave on the host after its destroy, so that a suite's clean-up can fail
 * when something is left rather than pass because destroy did not throw. Taken just before the
 * destroy ({@link #before}), checked just after ({@link #afterDestroy}):
 * <ul>
 * <li>processes: the pids the instance's state names (its {@code pid} and any {@code pid} or
 * {@code *_pid} entry of its data) and their descendants, read from {@code /proc} with their start
 * times (so a reused pid is not taken for them), and any process whose command line or working
 * directory names the instance's directory (a helper that is no descendant, as runsc's gofer);
 * zombies count as gone, as they hold nothing but their pid;</li>
 * <li>mounts: entries of {@code /proc/self/mountinfo} at or under the instance's directory, and loop
 * devices backed by a file in it (awaited for a few seconds: the kernel detaches an auto-clearing
 * loop device after its last unmount asynchronously, since Linux 5.17);</li>
 * <li>files: the directory core removes after a destroy must be removable, as core removes it (a walk
 * deleting from the leaves: never tried over a mount left in it, which would reach into whatever is
 * mounted); outside it, no path the state names that names the instance (a link, a socket) or is a
 * cgroup (a pooled sandbox's keeps the pool's name), and no cgroup named after it, may remain.</li>
 * </ul>
 * Something "names the instance" when one of its path's names holds the instance's id between
 * separators (a dash, a dot, an underscore, or the name's start or end): {@code kit-1}, and runsc's
 * container id {@code vivarium-kit-1-8f3a...}, but not {@code kit-10}.
 */
public final class InstanceLeftovers {
    private static final Path PROC = Path.of("/proc");
    private static final Path CGROUPS = Path.of("/sys/fs/cgroup");
    private static final Path LOOP_DEVICES = Path.of("/sys/block");
    /** How long the kernel may take to detach an auto-clearing loop device once its last user let go. */
    private static final Duration LOOP_DETACH = Duration.ofSeconds(10);
    /** Deep enough for cgroup v1 ({@code /<controller>/vivarium/<id>}) and v2 ({@code /vivarium/<id>}). */
    private static final int CGROUP_DEPTH = 3;

    private final String id;
    private final Path dir;
    private final boolean hostProcesses;
    /** The start time of each process of the instance, by pid, when it was taken. */
    private final Map<Long, String> processes;
    private final List<Path> namedOutside;

    private InstanceLeftovers(String id, Path dir, boolean hostProcesses, Map<Long, String> processes,
            List<Path> namedOutside) {
        this.id = id;
        this.dir = dir;
        this.hostProcesses = hostProcesses;
        this.processes = processes;
        this.namedOutside = namedOutside;
    }

    /**
     * Destroys the instance as core does ({@link SandboxBackend#destroy}, then its directory removed)
     * and fails with what is left of it on the host.
     */
    public static void destroy(SandboxBackend backend, InstanceSpec spec, InstanceState state, boolean hostProcesses) {
        InstanceLeftovers leftovers = before(spec, state, hostProcesses);
        backend.destroy(spec, state);
        List<String> left = leftovers.afterDestroy();
        if (!left.isEmpty()) {
            throw new AssertionError(backend.name() + " left " + left.size() + " thing(s) of instance " + spec.id()
                    + " after its destroy:\n  " + String.join("\n  ", left));
        }
    }

    /**
     * What an instance that never got a state (its create or fork failed) left on the host: a process
     * or mount in its directory, a cgroup named after it; removes its directory as core would.
     */
    public static List<String> leftByAFailed(InstanceSpec spec) {
        return before(spec, new InstanceState(0, Map.of()), true).afterDestroy();
    }

    /**
     * What the instance has on the host now, before its destroy.
     *
     * @param hostProcesses whether the state's pids are host pids (false for a fake whose "pids" are
     *        numbers it made up)
     */
    public static InstanceLeftovers before(InstanceSpec spec, InstanceState state, boolean hostProcesses) {
        Path dir = spec.dir().toAbsolutePath().normalize();
        Map<Long, String> processes = new LinkedHashMap<>();
        if (hostProcesses) {
            for (long pid : pidsNamed(state)) {
                descendantsAndSelf(pid).forEach(p -> startTime(p).ifPresent(t -> processes.put(p, t)));
            }
        }
        List<Path> namedOutside = new ArrayList<>();
        for (String value : state.data().values()) {
            if (value.startsWith("/")) {
                Path path = Path.of(value).normalize();
                if (!path.startsWith(dir) && (names(path, spec.id()) || path.startsWith(CGROUPS))) {
                    namedOutside.add(path);
                }
            }
        }
        return new InstanceLeftovers(spec.id(), dir, hostProcesses, processes, namedOutside);
    }

    /**
     * Removes the instance's directory as core does after a destroy (unless a mount is left in it)
     * and says what is left of the instance, one line each; empty when nothing is.
     */
    public List<String> afterDestroy() {
        List<String> left = new ArrayList<>();
        if (hostProcesses) {
            left.addAll(processesLeft());
        }
        List<String> mounts = mountsLeft();
        left.addAll(mounts);
        left.addAll(loopDevicesLeft());
        if (mounts.isEmpty()) {
            left.addAll(removeDirectory());
        } else {
            left.add("files: " + dir + " is not removed: a mount is left in it");
        }
        List<Path> outside = new ArrayList<>();
        for (Path path : namedOutside) {
            if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
                outside.add(path);
                left.add("file outside the instance's directory, named in its state: " + path);
            }
        }
        cgroupsLeft().stream().filter(cgroup -> !outside.contains(cgroup))
                .forEach(cgroup -> left.add("cgroup named after the instance: " + cgroup));
        return left;
    }

    // ---- processes ---------------------------------------------------------------------------

    private List<String> processesLeft() {
        List<String> left = new ArrayList<>();
        List<Long> reported = new ArrayList<>();
        processes.forEach((survivor, start) -> {
            if (startTime(survivor).filter(start::equals).isPresent() && !gone(survivor)) {
                for (long pid : descendantsAndSelf(survivor)) {
                    if (!reported.contains(pid) && !gone(pid)) {
                        reported.add(pid);
                        left.add("process " + pid + " of the instance: " + commandLine(pid));
                    }
                }
            }
        });
        long self = ProcessHandle.current().pid();
        for (long pid : allPids()) {
            if (pid == self || reported.contains(pid)) {
                continue;
            }
            String cmdline = commandLine(pid);
            String cwd = mentions(cmdline, dir.toString()) ? "" : link(PROC.resolve(Long.toString(pid)).resolve("cwd"));
            if ((mentions(cmdline, dir.toString()) || mentions(cwd, dir.toString())) && !gone(pid)) {
                reported.add(pid);
                left.add("process " + pid + " naming the instance's directory: " + cmdline
                        + (cwd.isEmpty() ? "" : " (in " + cwd + ")"));
            }
        }
        return left;
    }

    /** The pids the state names: its pid and every {@code pid} or {@code *_pid} entry of its data that is a number. */
    private static List<Long> pidsNamed(InstanceState state) {
        List<Long> pids = new ArrayList<>();
        if (state.pid() > 0) {
            pids.add(state.pid());
        }
        state.data().forEach((key, value) -> {
            if ((key.equals("pid") || key.endsWith("_pid")) && value.matches("[1-9][0-9]{0,9}")) {
                long pid = Long.parseLong(value);
                if (!pids.contains(pid)) {
                    pids.add(pid);
                }
            }
        });
        return pids;
    }

    /** The process and its descendants, by the JDK's walk of {@code /proc} (parent before child). */
    private static List<Long> descendantsAndSelf(long root) {
        List<Long> all = new ArrayList<>(List.of(root));
        ProcessHandle.of(root).ifPresent(p -> p.descendants().forEach(d -> all.add(d.pid())));
        return all;
    }

    private static List<Long> allPids() {
        List<Long> pids = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, p -> p.getFileName().toString()
                .matches("[0-9]+"))) {
            entries.forEach(p -> pids.add(Long.parseLong(p.getFileName().toString())));
        } catch (IOException e) {
            throw new AssertionError("cannot list " + PROC, e);
        }
        return pids;
    }

    /** The fields of {@code /proc/PID/stat} after the command name: state, ppid, ... (empty once it is gone). */
    private static Optional<String[]> stat(long pid) {
        try {
            String stat = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.UTF_8);
            return Optional.of(stat.substring(stat.lastIndexOf(')') + 2).strip().split(" "));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Field 22 of {@code /proc/PID/stat}: clock ticks since boot, which with the pid names one process. */
    private static Optional<String> startTime(long pid) {
        return stat(pid).filter(fields -> fields.length > 19).map(fields -> fields[19]);
    }

    /** True once the process has ended, as a zombie too. */
    private static boolean gone(long pid) {
        return stat(pid).map(fields -> fields[0].equals("Z") || fields[0].equals("X")).orElse(true);
    }

    private static String commandLine(long pid) {
        try {
            return new String(Files.readAllBytes(PROC.resolve(Long.toString(pid)).resolve("cmdline")),
                    StandardCharsets.UTF_8).replace('\0', ' ').strip();
        } catch (IOException e) {
            return "";
        }
    }

    // ---- mounts ------------------------------------------------------------------------------

    private List<String> mountsLeft() {
        List<String> left = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(PROC.resolve("self/mountinfo"), StandardCharsets.UTF_8)) {
                String[] fields = line.split(" ");
                Path mountPoint = Path.of(unescape(fields[4]));
                if (mountPoint.startsWith(dir)) {
                    left.add("mount at " + mountPoint + ": " + line);
                }
            }
        } catch (IOException e) {
            throw new AssertionError("cannot read /proc/self/mountinfo", e);
        }
        return left;
    }

    private List<String> loopDevicesLeft() {
        long deadline = System.nanoTime() + LOOP_DETACH.toNanos();
        List<String> left = loopDevicesBacked();
        while (!left.isEmpty() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            left = loopDevicesBacked();
        }
        return left;
    }

    private List<String> loopDevicesBacked() {
        List<String> left = new ArrayList<>();
        try (DirectoryStream<Path> devices = Files.newDirectoryStream(LOOP_DEVICES, "loop*")) {
            for (Path device : devices) {
                Path backing = device.resolve("loop/backing_file");
                if (Files.isReadable(backing)) {
                    String file = Files.readString(backing, StandardCharsets.UTF_8).strip();
                    if (mentions(file, dir.toString())) {
                        left.add("loop device /dev/" + device.getFileName() + " backed by " + file);
                    }
                }
            }
        } catch (IOException e) {
            // no /sys/block: no loop devices to leave
        }
        return left;
    }

    /** A mount point as mountinfo writes it: space, tab, newline and backslash as octal escapes. */
    private static String unescape(String field) {
        return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    }

    // ---- files -------------------------------------------------------------------------------

    private List<String> removeDirectory() {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return List.of();
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | RuntimeException e) {
            return List.of("files: the directory core removes after a destroy cannot be removed: " + e);
        }
        return List.of();
    }

    private List<Path> cgroupsLeft() {
        if (!Files.isDirectory(CGROUPS)) {
            return List.of();
        }
        try (Stream<Path> walk = Files.walk(CGROUPS, CGROUP_DEPTH)) {
            return walk.filter(p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) && names(p.getFileName(), id))
                    .toList();
        } catch (IOException | RuntimeException e) {
            // a cgroup removed during the walk
            return List.of();
        }
    }

    // ---- names -------------------------------------------------------------------------------

    /** Whether a name in {@code path} holds {@code id} between separators. */
    private static boolean names(Path path, String id) {
        for (Path name : path) {
            String n = name.toString();
            for (int at = n.indexOf(id); at >= 0; at = n.indexOf(id, at + 1)) {
                int after = at + id.length();
                if ((at == 0 || isSeparator(n.charAt(at - 1))) && (after == n.length() || isSeparator(n.charAt(after)))) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean isSeparator(char c) {
        return c == '-' || c == '.' || c == '_';
    }

    /** Whether {@code text} names {@code path} or a path below it (not a sibling that starts with its name). */
    private static boolean mentions(String text, String path) {
        for (int at = text.indexOf(path); at >= 0; at = text.indexOf(path, at + 1)) {
            int after = at + path.length();
            if (after == text.length() || !isNameChar(text.charAt(after))) {
                return true;
            }
        }
        return false;
    }

    private static boolean isNameChar(char c) {
        return Character.isLetterOrDigit(c) || c == '-' || c == '_' || c == '.';
    }

    private static String link(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }
}
