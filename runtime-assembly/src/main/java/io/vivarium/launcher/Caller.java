package io.vivarium.launcher;

import java.io.Console;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * Who runs a command line: its environment, its working directory (relative paths on the command
 * line are its), whether its stderr is a terminal (progress bars redraw in place there), the mode
 * files it makes get, and whether it is this process (only then are this JVM's stdin and terminal
 * its own, which {@code sandbox shell} needs). The launcher's own process is one caller;
 * {@link CliServer} runs each client's command with that client's.
 *
 * @param umask the caller's file mode creation mask, or null for this process's own (which files made here get anyway)
 */
record Caller(Map<String, String> env, Path workDir, boolean terminal, Integer umask, boolean isThisProcess) {

    /** The process this JVM is. */
    static Caller thisProcess() {
        return new Caller(System.getenv(), Path.of("").toAbsolutePath(), hasTerminal(), null, true);
    }

    /** A client of the command-line server. */
    static Caller client(Map<String, String> env, Path workDir, boolean terminal, int umask) {
        return new Caller(env, workDir, terminal, umask, false);
    }

    /** A path the caller named, relative to its working directory unless absolute. */
    Path path(String name) {
        return workDir.resolve(name);
    }

    /** Gives a file this caller just made the mode its umask gives a new file (a no-op for this process). */
    void madeFile(Path file) throws IOException {
        if (umask != null) {
            Set<PosixFilePermission> mode = EnumSet.noneOf(PosixFilePermission.class);
            PosixFilePermission[] bits = PosixFilePermission.values(); // OWNER_READ .. OTHERS_EXECUTE, high bit first
            for (int i = 0; i < bits.length; i++) {
                if ((0666 & ~umask & (0400 >> i)) != 0) {
                    mode.add(bits[i]);
                }
            }
            Files.setPosixFilePermissions(file, mode);
        }
    }

    /** Whether this process talks to a terminal: {@code Console.isTerminal()} from Java 22, a console at all before. */
    private static boolean hasTerminal() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            return (boolean) Console.class.getMethod("isTerminal").invoke(console);
        } catch (ReflectiveOperationException beforeJava22) {
            return true;
        }
    }
}
