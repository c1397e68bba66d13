package io.vivarium.common.mounts;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A process's mount table ({@code /proc/PID/mountinfo}), this process's unless a pid is given:
 * what is mounted where, from which device, and which directory of that device. The one reader of
 * it, embedded by the bundles that mount.
 */
public final class MountTable {
    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    /**
     * One line of the table.
     *
     * @param device the file system's device, {@code major:minor} (field 3)
     * @param root the directory of that file system mounted here, {@code /} for all of it (field 4)
     * @param mountPoint where it is mounted (field 5)
     * @param options the per-mount options (field 6)
     * @param source what the file system was mounted from, {@code /dev/loop3} say (the field after its type)
     */
    public record Mount(String device, String root, String mountPoint, String options, String source) {
    }

    private MountTable() {
    }

    /** The topmost mount at {@code dir}, if anything is mounted there. */
    public static Optional<Mount> at(Path dir) {
        return at(MOUNTINFO, dir);
    }

    /**
     * The topmost mount at {@code dir} in the mount namespace of process {@code pid}, {@code dir}
     * as that process sees it; empty also when the process is gone.
     */
    public static Optional<Mount> at(long pid, Path dir) {
        try {
            return at(Path.of("/proc", Long.toString(pid), "mountinfo"), dir);
        } catch (UncheckedIOException gone) {
            return Optional.empty();
        }
    }

    private static Optional<Mount> at(Path mountinfo, Path dir) {
        try (Stream<String> lines = Files.lines(mountinfo)) {
            return mountsAt(lines, dir).reduce((first, last) -> last).map(MountTable::parse);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every mount, in the table's order. */
    public static List<Mount> all() {
        try (Stream<String> lines = Files.lines(MOUNTINFO)) {
            return lines.map(MountTable::parse).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Whether something is mounted at {@code dir}. */
    public static boolean isMountPoint(Path dir) {
        return at(dir).isPresent();
    }

    /**
     * The lines of mounts at {@code dir}. Only lines holding its escaped form are parsed: a table
     * with two mounts per sandbox is read once per sandbox at re-adoption.
     */
    public static Stream<String> mountsAt(Stream<String> lines, Path dir) {
        String target = dir.toAbsolutePath().normalize().toString();
        String field = " " + escape(target) + " ";
        return lines.filter(line -> line.contains(field) && unescape(line.split(" ", 6)[4]).equals(target));
    }

    static Mount parse(String line) {
        String[] f = line.split(" ", 7);
        // optional fields come before the " - ", then the type, the source and the super options
        String[] after = line.substring(line.indexOf(" - ") + 3).split(" ", 3);
        return new Mount(f[2], unescape(f[3]), unescape(f[4]), f[5], unescape(after[1]));
    }

    /** A path as the table shows it: space, tab, newline and backslash as octal escapes. */
    public static String escape(String path) {
        StringBuilder out = new StringBuilder(path.length());
        for (char c : path.toCharArray()) {
            switch (c) {
                case ' ', '\t', '\n', '\\' -> out.append(String.format("\\%03o", (int) c));
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    static String unescape(String escaped) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < escaped.length(); i++) {
            char c = escaped.charAt(i);
            if (c == '\\' && i + 3 < escaped.length()) {
                out.append((char) Integer.parseInt(escaped.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
