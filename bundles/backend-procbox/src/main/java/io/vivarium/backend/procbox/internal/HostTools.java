package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ExecResult;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The host's file tools ({@code mount}, {@code cp}, {@code rm}...) run as processes of their own,
 * failing with what they printed.
 */
final class HostTools {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL", "C");
    /** Bounds a copy of a whole workspace too; a hung tool must not hang the daemon for good. */
    private static final Duration TIMEOUT = Duration.ofMinutes(10);
    private static final int OUTPUT_BYTES = 16 * 1024;

    static final HostTools AS_DAEMON = new HostTools(List.of());

    private final List<String> prefix;

    private HostTools(List<String> prefix) {
        this.prefix = prefix;
    }

    /**
     * Tools that may read and remove whatever a sandbox's processes made of its files. An
     * unprivileged daemon owns those files but is refused what their modes refuse to their
     * owner (mode 000 files, read-only directories); in the sandbox's user namespace it is root
     * over them, as the sandbox is.
     */
    static HostTools withAccessOf(ProcboxRecord sandbox) {
        if (!sandbox.userNamespace() || !sandbox.init().isRunning()) {
            return AS_DAEMON;
        }
        return new HostTools(List.of(SandboxCommands.NSENTER, "-t", Long.toString(sandbox.init().pid()), "-U",
                "--preserve-credentials", "--"));
    }

    /**
     * Tools run in a user-namespace sandbox's mount namespace and root, with the powers of its
     * namespace's root (the daemon's uid owns that namespace).
     */
    static HostTools insideUserNamespace(ProcboxRecord sandbox) {
        return new HostTools(List.of(SandboxCommands.NSENTER, "-t", Long.toString(sandbox.init().pid()), "-U", "-m",
                "-r", "--preserve-credentials", "--"));
    }

    /** Copies {@code from}'s content and attributes into the existing directory {@code to}, reflinked where possible. */
    void copyTree(Path from, Path to) throws IOException {
        run("cp", "-a", "--reflink=auto", "--", from + "/.", to + "/");
    }

    /** Removes {@code dir} recursively, never following symlinks nor descending into anything mounted inside. */
    void removeTree(Path dir) throws IOException {
        run("rm", "-rf", "--one-file-system", "--", dir.toString());
    }

    /** Runs {@code argv}; throws with its exit status and error output if it fails. */
    void run(String... argv) throws IOException {
        List<String> command = new ArrayList<>(List.of(SandboxCommands.SETSID));
        command.addAll(prefix);
        command.addAll(List.of(argv));
        ExecResult result = ProcessRunner.run(command, ENV, null, TIMEOUT, OUTPUT_BYTES);
        if (result.exitCode() != 0) {
            String why = result.timedOut() ? "timed out after " + TIMEOUT.toMinutes() + " min"
                    : "exit status " + result.exitCode();
            throw new IOException(String.join(" ", argv) + " failed (" + why + "): " + result.stderr().strip());
        }
    }
}
