package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A template's root file system ({@link io.vivarium.api.spi.RootImage}) as bubblewrap arguments:
 * each top-level entry of the image bound read-only at {@code /} (a link recreated as a link),
 * since the sandbox's root is bubblewrap's own, where it makes the mount points of what the sandbox
 * gets besides ({@code /proc}, {@code /dev}, {@code /tmp}, {@code /work}, {@code /run}); those the
 * image's entries of the same name give way to. The image is shared by every sandbox of it and never
 * written: nothing is made inside it.
 */
final class ImageRootLayout {
    /** What the sandbox gets of its own, over the image's entries of these names. */
    private static final Set<String> SANDBOX_OWN = Set.of("proc", "dev", "tmp", "sys", "run",
            SandboxCommands.WORKSPACE.substring(1));

    private ImageRootLayout() {
    }

    static List<String> bwrapArgs(Path rootfs) {
        List<String> args = new ArrayList<>();
        try (Stream<Path> entries = Files.list(rootfs)) {
            for (Path entry : entries.sorted().toList()) {
                String name = entry.getFileName().toString();
                if (SANDBOX_OWN.contains(name)) {
                    continue;
                }
                if (Files.isSymbolicLink(entry)) {
                    args.addAll(List.of("--symlink", Files.readSymbolicLink(entry).toString(), "/" + name));
                } else if (Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS) || Files.isRegularFile(entry, LinkOption.NOFOLLOW_LINKS)) {
                    args.addAll(List.of("--ro-bind", entry.toString(), "/" + name));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the root file system " + rootfs, e);
        }
        return List.copyOf(args);
    }

    /** The image's {@code /etc/resolv.conf} when it is a file of its own, where an egress sandbox's resolver is bound. */
    static boolean hasResolvConf(Path rootfs) {
        return Files.isDirectory(rootfs.resolve("etc"), LinkOption.NOFOLLOW_LINKS)
                && Files.isRegularFile(rootfs.resolve("etc/resolv.conf"), LinkOption.NOFOLLOW_LINKS);
    }
}
