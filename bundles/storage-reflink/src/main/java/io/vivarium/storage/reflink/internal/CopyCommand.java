package io.vivarium.storage.reflink.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.apache.commons.exec.CommandLine;
import org.apache.commons.exec.DefaultExecutor;
import org.apache.commons.exec.ExecuteException;
import org.apache.commons.exec.ExecuteWatchdog;
import org.apache.commons.exec.PumpStreamHandler;

/**
 * {@code cp -a} of a file or a directory tree, with a watchdog so a hung copy cannot hang the
 * daemon: {@code --reflink=always} (fails where the filesystem cannot clone) or a plain sparse copy.
 * Paths are passed as arguments, never through a shell.
 */
final class CopyCommand {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL", "C");
    private static final int OUTPUT_CHARS = 4096;

    private CopyCommand() {
    }

    static void copy(Path source, Path target, boolean reflink, Duration timeout) throws IOException {
        CommandLine command = new CommandLine("cp");
        command.addArgument("-a", false);
        command.addArgument(reflink ? "--reflink=always" : "--sparse=always", false);
        command.addArgument("--", false);
        command.addArgument(source.toString(), false);
        command.addArgument(target.toString(), false);
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        ExecuteWatchdog watchdog = ExecuteWatchdog.builder().setTimeout(timeout).get();
        DefaultExecutor executor = DefaultExecutor.builder().get();
        executor.setStreamHandler(new PumpStreamHandler(output));
        executor.setWatchdog(watchdog);
        try {
            executor.execute(command, ENV);
        } catch (ExecuteException e) {
            String why = watchdog.killedProcess() ? "killed after " + timeout.toMillis() + " ms"
                    : "exit status " + e.getExitValue();
            String text = output.toString(StandardCharsets.UTF_8).strip();
            throw new IOException("cp " + (reflink ? "--reflink=always " : "") + source + " " + target + " failed (" + why
                    + "): " + (text.length() > OUTPUT_CHARS ? text.substring(0, OUTPUT_CHARS) + "..." : text));
        }
    }
}
