package io.vivarium.testkit.fingerprint;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Assumptions;

/**
 * Runs a guest listing command on this host as a guest would: with the host's /bin/sh and tools,
 * or with busybox sh and nothing but busybox applets on PATH. The environment holds only PATH.
 */
public enum GuestShell {
    HOST, BUSYBOX;

    private static final Path BUSYBOX_BINARY = Path.of("/bin/busybox");
    private static final Path SETPRIV = Path.of("/usr/bin/setpriv");
    private static final int NOBODY = 65534;

    /** What one run printed: path to fingerprint, parsed from the NUL-terminated records. */
    public record Listing(int exitCode, Map<String, String> files, String stderr) {
    }

    public void assumeInstalled() {
        Assumptions.assumeTrue(this == HOST || Files.isExecutable(BUSYBOX_BINARY),
                "busybox is not installed (" + BUSYBOX_BINARY + "); apt-get install busybox to run this case");
    }

    public static void assumeCanRunAsNobody() throws IOException {
        Assumptions.assumeTrue((int) Files.getAttribute(Path.of("/proc/self"), "unix:uid") == 0,
                "switching to uid " + NOBODY + " needs root");
        Assumptions.assumeTrue(Files.isExecutable(SETPRIV), "needs " + SETPRIV + " (util-linux) to switch uid");
    }

    public Listing run(List<String> argv, Path scratch) throws IOException, InterruptedException {
        return run(argv, scratch, false, null);
    }

    /**
     * Runs argv in scratch, which also takes its output files, as uid/gid {@value #NOBODY} if asked,
     * with the executables in shims (may be null) ahead of this shell's tools on PATH.
     */
    public Listing run(List<String> argv, Path scratch, boolean asNobody, Path shims)
            throws IOException, InterruptedException {
        assertEquals("/bin/sh", argv.get(0));
        List<String> command = new ArrayList<>();
        if (asNobody) {
            command.addAll(List.of(SETPRIV.toString(), "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups"));
        }
        if (this == BUSYBOX) {
            command.addAll(List.of(BUSYBOX_BINARY.toString(), "sh"));
            command.addAll(argv.subList(1, argv.size()));
        } else {
            command.addAll(argv);
        }
        String path = this == HOST ? "/usr/bin:/bin" : busyboxApplets(scratch).toString();
        Path out = Files.createTempFile(scratch, "stdout", "");
        Path err = Files.createTempFile(scratch, "stderr", "");
        ProcessBuilder builder = new ProcessBuilder(command).directory(scratch.toFile())
                .redirectInput(new File("/dev/null"))
                .redirectOutput(out.toFile()).redirectError(err.toFile());
        builder.environment().clear();
        builder.environment().put("PATH", shims == null ? path : shims + ":" + path);
        Process process = builder.start();
        Bounded.waitFor(process, Duration.ofSeconds(60), "the listing");
        return new Listing(process.exitValue(), parse(Files.readAllBytes(out)), Files.readString(err));
    }

    private static Path busyboxApplets(Path scratch) throws IOException {
        Path dir = scratch.resolve("busybox-applets");
        if (Files.notExists(dir)) {
            Files.createDirectory(dir);
            // a copy, since JUnit warns about links out of a temporary directory when it deletes one
            Path busybox = Files.copy(BUSYBOX_BINARY, dir.resolve("busybox"), StandardCopyOption.COPY_ATTRIBUTES);
            for (String applet : List.of("sh", "find", "sha256sum", "stat")) {
                Files.createSymbolicLink(dir.resolve(applet), busybox.getFileName());
            }
        }
        return dir;
    }

    private static Map<String, String> parse(byte[] output) {
        Map<String, String> files = new TreeMap<>();
        if (output.length == 0) {
            return files;
        }
        assertEquals(0, output[output.length - 1], "the last record is NUL-terminated");
        for (String record : new String(output, UTF_8).split("\0")) {
            int tab = record.indexOf('\t');
            assertTrue(tab > 0, () -> "record without a fingerprint: " + record);
            String path = record.substring(tab + 1);
            assertNull(files.put(path, record.substring(0, tab)), () -> "listed twice: " + path);
        }
        return files;
    }
}
