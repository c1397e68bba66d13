package io.vivarium.backend.qemu.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.commons.exec.CommandLine;
import org.apache.commons.exec.DefaultExecutor;
import org.apache.commons.exec.ExecuteException;
import org.apache.commons.exec.ExecuteWatchdog;
import org.apache.commons.exec.PumpStreamHandler;

/**
 * Runs a host tool (qemu-img, QEMU's launch, which returns once the VM is set up and QEMU has
 * daemonized itself) through Commons Exec with a watchdog, so that a hung tool cannot hang a
 * request. Its output is kept (bounded) for the error.
 */
final class HostCommand {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL", "C");
    private static final int OUTPUT_BYTES = 16 * 1024;

    private HostCommand() {
    }

    /** Runs {@code argv}; throws with its exit status and output if it fails or outlives {@code timeout}. */
    static void run(List<String> argv, Duration timeout) throws IOException {
        CommandLine command = new CommandLine(argv.get(0));
        argv.subList(1, argv.size()).forEach(arg -> command.addArgument(arg, false));
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        ExecuteWatchdog watchdog = ExecuteWatchdog.builder().setTimeout(timeout).get();
        DefaultExecutor executor = DefaultExecutor.builder().get();
        executor.setStreamHandler(new PumpStreamHandler(output));
        executor.setWatchdog(watchdog);
        try {
            executor.execute(command, ENV);
        } catch (ExecuteException e) {
            String why = watchdog.killedProcess() ? "killed after " + timeout.toSeconds() + " s"
                    : "exit status " + e.getExitValue();
            throw new IOException(argv.get(0) + " failed (" + why + "): " + bounded(output));
        }
    }

    private static String bounded(ByteArrayOutputStream output) {
        String text = output.toString(StandardCharsets.UTF_8).strip();
        return text.length() > OUTPUT_BYTES ? "..." + text.substring(text.length() - OUTPUT_BYTES) : text;
    }
}
