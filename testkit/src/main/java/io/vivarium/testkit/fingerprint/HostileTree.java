package io.vivarium.testkit.fingerprint;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Two directories to list, one with spaces, quotes and a command substitution in its name and one
 * starting with a dash, holding file names a shell, find or a hashing tool could get wrong, plus
 * entries a listing must leave out (symlinks, an empty directory, a FIFO). Everything, root
 * included, is readable by every user.
 *
 * @param dirs the directories to pass to the listing command
 * @param files every regular file below them, as absolute paths
 * @param spaced the directory with spaces in its name
 */
public record HostileTree(List<String> dirs, Set<String> files, Path spaced) {

    private static final List<String> NAMES = List.of("a b.txt", "it's", "\"q\"", "$(touch pwned)", "`id`", "-rf",
            "--help", "new\nline", "trailing newline\n", "tab\there", "*", "back\\slash", " leading space", "%s%n");

    public static HostileTree create(Path root) throws IOException, InterruptedException {
        Path spaced = Files.createDirectory(root.resolve("my 'dir' $(touch pwned)"));
        Path dashed = Files.createDirectory(root.resolve("-dash"));
        Set<String> files = new TreeSet<>();
        for (String name : NAMES) {
            files.add(Files.write(spaced.resolve(name), name.getBytes(UTF_8)).toString());
        }
        files.add(Files.write(dashed.resolve("-rf"), "dash".getBytes(UTF_8)).toString());
        files.add(Files.write(spaced.resolve("empty"), new byte[0]).toString());
        byte[] large = new byte[300 * 1024 + 7];
        new Random(42).nextBytes(large);
        Path nested = Files.createDirectories(spaced.resolve("sub dir/deeper"));
        files.add(Files.write(nested.resolve("large"), large).toString());
        Path old = Files.write(spaced.resolve("before 1970"), "moon".getBytes(UTF_8));
        // stat rounds a fractional mtime before 1970 down; Files.setLastModifiedTime cannot set one
        run("touch", "-d", "1969-07-20T20:17:39.5Z", old.toString());
        files.add(old.toString());

        Files.createSymbolicLink(spaced.resolve("link"), spaced.resolve("a b.txt"));
        Files.createSymbolicLink(spaced.resolve("dir link"), nested);
        Files.createDirectory(spaced.resolve("empty dir"));
        run("mkfifo", spaced.resolve("fifo").toString());

        openToEveryone(root);
        return new HostileTree(List.of(spaced.toString(), dashed.toString()), files, spaced);
    }

    private static void run(String... command) throws IOException, InterruptedException {
        assertEquals(0, new ProcessBuilder(command).inheritIO().start().waitFor(), String.join(" ", command));
    }

    private static void openToEveryone(Path root) throws IOException {
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.filter(p -> !Files.isSymbolicLink(p)).toList()) {
                String mode = Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--";
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode));
            }
        }
    }
}
