package io.vivarium.launcher;

import java.io.Console;
import java.nio.file.Path;
import java.util.Map;

/**
 * Who runs a command line: its environment, its working directory (relative paths on the command
 * line are its) and whether its stderr is a terminal (progress bars redraw in place there). The
 * launcher's own process is one caller; {@link CliServer} runs each client's command with that
 * client's.
 */
record Caller(Map<String, String> env, Path workDir, boolean terminal) {

    /** The process this JVM is. */
    static Caller thisProcess() {
        return new Caller(System.getenv(), Path.of("").toAbsolutePath(), hasTerminal());
    }

    /** A path the caller named, relative to its working directory unless absolute. */
    Path path(String name) {
        return workDir.resolve(name);
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
