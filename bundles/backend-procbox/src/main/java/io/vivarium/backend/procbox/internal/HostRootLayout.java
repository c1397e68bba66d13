package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The host's top-level program directories ({@code /bin}, {@code /lib64}, ...) as bubblewrap
 * arguments: recreated as symlinks where the host has merged them into {@code /usr}, bound
 * read-only where they are real directories, left out where they do not exist.
 */
final class HostRootLayout {

    private static final List<String> PROGRAM_DIRS = List.of("bin", "sbin", "lib", "lib32", "lib64", "libx32");

    private HostRootLayout() {
    }

    static List<String> bwrapArgs(Path hostRoot) {
        List<String> args = new ArrayList<>();
        for (String name : PROGRAM_DIRS) {
            Path path = hostRoot.resolve(name);
            String inSandbox = "/" + name;
            if (Files.isSymbolicLink(path)) {
                args.addAll(List.of("--symlink", readLink(path), inSandbox));
            } else if (Files.isDirectory(path)) {
                args.addAll(List.of("--ro-bind", path.toString(), inSandbox));
            }
        }
        return List.copyOf(args);
    }

    private static String readLink(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
