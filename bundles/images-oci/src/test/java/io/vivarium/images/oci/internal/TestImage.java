package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import io.vivarium.testkit.Bounded;

/**
 * A small real image made with umoci for the tests: busybox with the C library it links, an
 * {@code /etc/passwd} and {@code /etc/group} naming user {@code app} (1234) in group {@code app}
 * (2345), and a configuration that runs as {@code app} in {@code /home/app} with {@code FOO=bar}.
 */
final class TestImage {
    static final int UID = 1234;
    static final int GID = 2345;
    private static final Duration TOOL_TIME = Duration.ofMinutes(2);

    private TestImage() {
    }

    /** Whether this host has what the tests pull and unpack with. */
    static boolean toolsPresent() {
        return Files.isExecutable(Path.of("/usr/bin/skopeo")) && Files.isExecutable(Path.of("/usr/bin/umoci"))
                && Files.isExecutable(Path.of("/bin/busybox"));
    }

    /** Makes the layout {@code dir} with the image tagged {@code app}; returns {@code oci:<dir>:app}. */
    static String layout(Path dir) throws IOException {
        Path root = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-root"));
        Files.createDirectories(root.resolve("bin"));
        Files.copy(Path.of("/bin/busybox"), root.resolve("bin/busybox"));
        Files.createSymbolicLink(root.resolve("bin/sh"), Path.of("busybox"));
        for (String lib : List.of("/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libresolv.so.2",
                "/lib64/ld-linux-x86-64.so.2")) {
            Path in = root.resolve(lib.substring(1));
            Files.createDirectories(in.getParent());
            Files.copy(Path.of(lib), in);
        }
        Files.createDirectories(root.resolve("etc"));
        Files.createDirectories(root.resolve("home/app"));
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:" + UID + ":" + GID
                + ":app:/home/app:/bin/sh\n");
        Files.writeString(root.resolve("etc/group"), "root:x:0:\napp:x:" + GID + ":\n");
        umoci("init", "--layout", dir.toString());
        umoci("new", "--image", dir + ":app");
        umoci("insert", "--image", dir + ":app", root.toString(), "/");
        umoci("config", "--image", dir + ":app", "--config.user", "app", "--config.workingdir", "/home/app",
                "--config.env", "FOO=bar", "--config.entrypoint", "/bin/sh", "--config.entrypoint", "-c",
                "--config.cmd", "echo hello");
        return "oci:" + dir + ":app";
    }

    /** Adds a layer of one entry to the image tagged {@code app} in {@code layout}, made as {@code entry} says. */
    static void addLayer(Path layout, TarArchiveEntry entry, byte[] content) throws IOException {
        Path tar = layout.resolveSibling("layer-" + System.nanoTime() + ".tar");
        try (OutputStream out = Files.newOutputStream(tar); TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            entry.setSize(content.length);
            t.putArchiveEntry(entry);
            t.write(content);
            t.closeArchiveEntry();
        }
        umoci("raw", "add-layer", "--image", layout + ":app", tar.toString());
    }

    static TarArchiveEntry file(String name) {
        return new TarArchiveEntry(name);
    }

    static byte[] text(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void umoci(String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("/usr/bin/umoci"));
        argv.addAll(List.of(args));
        Bounded.Ran ran = Bounded.run(TOOL_TIME, argv.toArray(String[]::new));
        if (ran.exitCode() != 0) {
            throw new IOException(String.join(" ", argv) + " failed: " + ran.output());
        }
    }
}
