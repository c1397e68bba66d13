package io.vivarium.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Small real OCI images for the tests, made with umoci: busybox with the C library it links, an
 * {@code /etc/passwd} and {@code /etc/group} naming user {@code app} ({@value #UID}) in group
 * {@code app} ({@value #GID}), and a configuration that runs as {@code app} in {@code /home/app}
 * with {@code FOO=bar}, {@code Entrypoint ["/bin/sh", "-c"]} and {@code Cmd ["echo hello"]}.
 */
public final class OciTestImages {
    public static final int UID = 1234;
    public static final int GID = 2345;
    public static final String SKOPEO = "/usr/bin/skopeo";
    public static final String UMOCI = "/usr/bin/umoci";
    private static final Duration TOOL_TIME = Duration.ofMinutes(2);

    private OciTestImages() {
    }

    /** Why this host cannot make, pull and unpack the images, or null when it can. */
    public static String missingTools() {
        for (String tool : List.of(SKOPEO, UMOCI, "/bin/busybox")) {
            if (!Files.isExecutable(Path.of(tool))) {
                return "needs " + tool + " (apt-get install skopeo umoci busybox)";
            }
        }
        return null;
    }

    /** Makes the layout {@code dir} with the image tagged {@code app}; returns {@code oci:<dir>:app}. */
    public static String layout(Path dir) throws IOException {
        return layout(dir, List.of());
    }

    /**
     * {@link #layout(Path)} with {@code extraFiles} more (each a host file copied to the same path in
     * the image, e.g. a large one for a benchmark).
     */
    public static String layout(Path dir, List<Path> extraFiles) throws IOException {
        Path root = root(dir.resolveSibling(dir.getFileName() + "-root"), extraFiles);
        umoci("init", "--layout", dir.toString());
        umoci("new", "--image", dir + ":app");
        umoci("insert", "--image", dir + ":app", root.toString(), "/");
        umoci("config", "--image", dir + ":app", "--config.user", "app", "--config.workingdir", "/home/app",
                "--config.env", "FOO=bar", "--config.entrypoint", "/bin/sh", "--config.entrypoint", "-c",
                "--config.cmd", "echo hello");
        return "oci:" + dir + ":app";
    }

    /**
     * The image's root file system, unpacked as it is in an image (a backend's conformance check of a
     * template's root starts on it as it is): made in {@code root}, with {@code extraFiles}; returns {@code root}.
     */
    public static Path root(Path root, List<Path> extraFiles) throws IOException {
        Files.createDirectories(root.resolve("bin"));
        Files.copy(Path.of("/bin/busybox"), root.resolve("bin/busybox"));
        for (String applet : List.of("sh", "id", "pwd", "cat", "echo", "ls", "env", "touch", "sleep", "true", "grep", "head",
                "mkdir", "rm", "wc", "stat", "test")) {
            Files.createSymbolicLink(root.resolve("bin").resolve(applet), Path.of("busybox"));
        }
        List<Path> copied = new ArrayList<>(List.of(Path.of("/lib/x86_64-linux-gnu/libc.so.6"),
                Path.of("/lib/x86_64-linux-gnu/libresolv.so.2"), Path.of("/lib64/ld-linux-x86-64.so.2")));
        copied.addAll(extraFiles);
        for (Path file : copied) {
            Path in = root.resolve(file.toString().substring(1));
            Files.createDirectories(in.getParent());
            Files.copy(file, in);
        }
        Files.createDirectories(root.resolve("etc"));
        Files.createDirectories(root.resolve("home/app"));
        Files.writeString(root.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:" + UID + ":" + GID
                + ":app:/home/app:/bin/sh\n");
        Files.writeString(root.resolve("etc/group"), "root:x:0:\napp:x:" + GID + ":\n");
        return root;
    }

    /** Copies the image {@code from} (a skopeo reference) to {@code to}, TLS not verified for a registry either side. */
    public static void copy(String from, String to) throws IOException {
        run(List.of(SKOPEO, "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false", from, to));
    }

    /** Runs umoci with {@code args}, failing with its output. */
    public static void umoci(String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of(UMOCI));
        argv.addAll(List.of(args));
        run(argv);
    }

    private static void run(List<String> argv) throws IOException {
        Bounded.Ran ran = Bounded.run(TOOL_TIME, argv.toArray(String[]::new));
        if (ran.exitCode() != 0) {
            throw new IOException(String.join(" ", argv) + " failed: " + ran.output());
        }
    }
}
