package io.vivarium.common.exec;

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
 * Runs a host tool (qemu-img; QEMU's launch, which returns once the VM is set up and QEMU has
 * daemonized itself) through Commons Exec with a watchdog, so that a hung tool cannot hang a
 * request. Arguments are passed as they are, never through a shell. Its output is kept (bounded)
 * for the error. The one copy, embedded by the bundles that run host tools.
 */
public final class HostCommand {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL", "C");
    private static final int OUTPUT_BYTES = 16 * 1024;
    /** What a tool may print before it counts as a failure: a JSON description of a long backing chain fits. */
    private static final int MAX_OUTPUT_BYTES = 4 << 20;

    private static final Duration LEAST_TOOL_TIME = Duration.ofSeconds(1);
    private static final Duration MOST_TOOL_TIME = Duration.ofMinutes(30);

    private HostCommand() {
    }

    /**
     * A tool's watchdog time from what is left of its caller's: at least a second, so that a tool
     * started at the deadline still fails cleanly, and at most half an hour.
     */
    public static Duration timeFor(Duration left) {
        return left.compareTo(LEAST_TOOL_TIME) < 0 ? LEAST_TOOL_TIME
                : left.compareTo(MOST_TOOL_TIME) > 0 ? MOST_TOOL_TIME : left;
    }

    /**
     * Runs {@code argv} and returns what it printed (stdout and stderr together); throws with its
     * exit status and output if it fails or outlives {@code timeout}.
     */
    public static String run(List<String> argv, Duration timeout) throws IOException {
        return run(argv, timeout, null);
    }

    /** {@link #run(List, Duration)} in the working directory {@code dir} (null: the daemon's). */
    public static String run(List<String> argv, Duration timeout, java.nio.file.Path dir) throws IOException {
        ByteArrayOutputStream output = new CappedOutput(MAX_OUTPUT_BYTES);
        execute(argv, timeout, dir, output, output);
        return output.toString(StandardCharsets.UTF_8);
    }

    /**
     * Runs {@code argv} and returns its standard output alone, exactly as printed (a document whose
     * bytes are hashed); its standard error is only in the failure, which is thrown as by
     * {@link #run(List, Duration)}.
     */
    public static byte[] stdout(List<String> argv, Duration timeout) throws IOException {
        ByteArrayOutputStream out = new CappedOutput(MAX_OUTPUT_BYTES);
        execute(argv, timeout, null, out, new CappedOutput(OUTPUT_BYTES));
        return out.toByteArray();
    }

    private static void execute(List<String> argv, Duration timeout, java.nio.file.Path dir, ByteArrayOutputStream out,
            ByteArrayOutputStream err) throws IOException {
        CommandLine command = new CommandLine(argv.get(0));
        argv.subList(1, argv.size()).forEach(arg -> command.addArgument(arg, false));
        ExecuteWatchdog watchdog = ExecuteWatchdog.builder().setTimeout(timeout).get();
        DefaultExecutor executor = dir == null ? DefaultExecutor.builder().get()
                : DefaultExecutor.builder().setWorkingDirectory(dir.toFile()).get();
        executor.setStreamHandler(new PumpStreamHandler(out, err));
        executor.setWatchdog(watchdog);
        try {
            executor.execute(command, ENV);
        } catch (ExecuteException e) {
            String why = watchdog.killedProcess() ? "killed after " + timeout.toSeconds() + " s"
                    : "exit status " + e.getExitValue();
            throw new IOException(argv.get(0) + " failed (" + why + "): " + bounded(err));
        }
    }

    private static String bounded(ByteArrayOutputStream output) {
        String text = output.toString(StandardCharsets.UTF_8).strip();
        return text.length() > OUTPUT_BYTES ? "..." + text.substring(text.length() - OUTPUT_BYTES) : text;
    }

    /** Keeps the first {@code max} bytes; a tool that prints more does not fill the heap. */
    private static final class CappedOutput extends ByteArrayOutputStream {
        private final int max;

        CappedOutput(int max) {
            this.max = max;
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            super.write(b, off, Math.max(0, Math.min(len, max - count)));
        }

        @Override
        public synchronized void write(int b) {
            if (count < max) {
                super.write(b);
            }
        }
    }
}
